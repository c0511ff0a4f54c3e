# The hosts module's plan-time warnings (check blocks: they warn, the plan goes on) and its
# refusals, each once. Plans only, on a state of their own that no run applies: the
# credentials stay unknown, so the audit's check block reads nothing and no address here is
# ever contacted (192.0.2.0/24 is TEST-NET-1, documentation only). That check is therefore
# "known after apply", which terraform test counts as a failure: every run that plans past
# the variables expects it, beside the warning it is about.

variables {
  hosts = [
    { name = "a", address = "192.0.2.11", failure_domain = "zone-a" },
    { name = "b", address = "192.0.2.12", failure_domain = "zone-b" },
    { name = "c", address = "192.0.2.13", failure_domain = "zone-c" },
  ]
  max_lock_ttl = "5m"
}

# The negative control of every warning below: private addresses, one failure domain per
# host, max_lock_ttl at the threshold. No expected failure: every check must pass.
run "no_warning" {
  command         = plan
  expect_failures = [check.redlock_deployment]
  assert {
    condition     = local.max_lock_ttl_ms == 300000
    error_message = "max_lock_ttl 5m is 300000 ms"
  }
}

run "long_max_lock_ttl_warns" {
  command = plan
  variables {
    max_lock_ttl = "5m0.5s"
  }
  expect_failures = [check.max_lock_ttl, check.redlock_deployment]
  assert {
    condition     = local.max_lock_ttl_ms == 300500
    error_message = "max_lock_ttl 5m0.5s is 300500 ms"
  }
}

run "max_lock_ttl_of_hours_warns" {
  command = plan
  variables {
    max_lock_ttl = "2h"
  }
  expect_failures = [check.max_lock_ttl, check.redlock_deployment]
  assert {
    condition     = local.max_lock_ttl_ms == 7200000 && local.max_lock_ttl_human == "2.0 hours"
    error_message = "max_lock_ttl 2h is 7200000 ms, 2.0 hours"
  }
}

run "max_lock_ttl_in_milliseconds_does_not_warn" {
  command         = plan
  expect_failures = [check.redlock_deployment]
  variables {
    max_lock_ttl = "299999ms"
  }
  assert {
    condition     = local.max_lock_ttl_ms == 299999
    error_message = "max_lock_ttl 299999ms is 299999 ms (ms is not read as minutes)"
  }
}

run "no_failure_domain_warns" {
  command = plan
  variables {
    hosts = [
      { name = "a", address = "192.0.2.11" },
      { name = "b", address = "192.0.2.12" },
      { name = "c", address = "192.0.2.13" },
    ]
  }
  expect_failures = [check.failure_domains, check.redlock_deployment]
}

run "shared_failure_domain_allowed_warns" {
  command = plan
  variables {
    hosts = [
      { name = "a", address = "192.0.2.11", failure_domain = "zone-1" },
      { name = "b", address = "192.0.2.12", failure_domain = "zone-1" },
      { name = "c", address = "192.0.2.13", failure_domain = "zone-2" },
    ]
    allow_shared_failure_domain = true
  }
  expect_failures = [check.failure_domains, check.redlock_deployment]
  assert {
    condition     = local.shared_domains == ["zone-1 (hosts a, b)"]
    error_message = "the warning names the shared domain and its hosts"
  }
}

run "loopback_address_warns" {
  command = plan
  variables {
    hosts = [
      { name = "a", address = "127.0.0.1", failure_domain = "zone-a" },
      { name = "b", address = "192.0.2.12", failure_domain = "zone-b" },
      { name = "c", address = "192.0.2.13", failure_domain = "zone-c" },
    ]
  }
  expect_failures = [check.host_addresses, check.redlock_deployment]
  assert {
    condition     = local.loopback_hosts == ["a (127.0.0.1)"]
    error_message = "the warning names the loopback host only"
  }
}

# Refusals: once each (a variable's validation, or one precondition of the endpoints output),
# never once per host.
run "shared_failure_domain_refused" {
  command = plan
  variables {
    hosts = [
      { name = "a", address = "192.0.2.11", failure_domain = "zone-1" },
      { name = "b", address = "192.0.2.12", failure_domain = "zone-1" },
      { name = "c", address = "192.0.2.13", failure_domain = "zone-2" },
    ]
  }
  expect_failures = [output.endpoints, check.redlock_deployment]
}

run "failure_domain_on_some_hosts_refused" {
  command = plan
  variables {
    hosts = [
      { name = "a", address = "192.0.2.11", failure_domain = "zone-1" },
      { name = "b", address = "192.0.2.12" },
      { name = "c", address = "192.0.2.13" },
    ]
  }
  expect_failures = [var.hosts]
}

run "ipv6_address_refused" {
  command = plan
  variables {
    hosts = [
      { name = "a", address = "2001:db8::11", failure_domain = "zone-a" },
      { name = "b", address = "192.0.2.12", failure_domain = "zone-b" },
      { name = "c", address = "192.0.2.13", failure_domain = "zone-c" },
    ]
  }
  expect_failures = [var.hosts]
}

run "unspecified_address_refused" {
  command = plan
  variables {
    hosts = [
      { name = "a", address = "0.0.0.0", failure_domain = "zone-a" },
      { name = "b", address = "192.0.2.12", failure_domain = "zone-b" },
      { name = "c", address = "192.0.2.13", failure_domain = "zone-c" },
    ]
  }
  expect_failures = [var.hosts]
}

run "address_out_of_range_refused" {
  command = plan
  variables {
    hosts = [
      { name = "a", address = "192.0.2.256", failure_domain = "zone-a" },
      { name = "b", address = "192.0.2.12", failure_domain = "zone-b" },
      { name = "c", address = "192.0.2.13", failure_domain = "zone-c" },
    ]
  }
  expect_failures = [var.hosts]
}

run "duplicated_name_refused" {
  command = plan
  variables {
    hosts = [
      { name = "a", address = "192.0.2.11", failure_domain = "zone-a" },
      { name = "a", address = "192.0.2.12", failure_domain = "zone-b" },
      { name = "c", address = "192.0.2.13", failure_domain = "zone-c" },
    ]
  }
  expect_failures = [var.hosts]
}

run "seed_fences_without_live_users_refused" {
  command = plan
  variables {
    seed_fences = true
    lock_users  = { billing = { key_prefix = "billing:" } }
  }
  expect_failures = [output.endpoints, check.redlock_deployment]
}
