# Plan-time refusals of the local cluster module (plans only: nothing is started).

variables {
  name_prefix    = "tftest"
  bind_addresses = ["127.67.0.1"]
  base_port      = 17379
  data_root      = "/tmp/redlock-tftest-never-created"
}

run "defaults_plan" {
  command = plan

  assert {
    condition     = output.quorum == 3
    error_message = "five masters need a quorum of 3"
  }
  assert {
    condition     = length(redlock_master.this) == 5
    error_message = "five masters by default"
  }
}

run "no_catalogue_spare_by_default" {
  command = plan

  assert {
    condition     = length(redlock_master.catalogue_spare) == 0 && output.catalogue_spare == null
    error_message = "no spare server unless catalogue_spare = true"
  }
}

run "catalogue_spare_outside_the_deployment" {
  command = plan
  variables {
    catalogue_spare = true
  }

  assert {
    condition     = length(redlock_master.catalogue_spare) == 1 && length(redlock_master.this) == 5
    error_message = "catalogue_spare adds one server beside the five masters"
  }
  assert {
    condition     = redlock_master.catalogue_spare[0].bind == "127.67.0.1" && redlock_master.catalogue_spare[0].port == 0
    error_message = "the spare listens on the first bind address, on a free port"
  }
  assert {
    condition     = !contains(redlock_master.this[*].data_dir, redlock_master.catalogue_spare[0].data_dir)
    error_message = "the spare has a data dir of its own"
  }
}

run "even_number_of_masters" {
  command = plan
  variables {
    masters = 4
  }
  expect_failures = [var.masters]
}

run "single_master" {
  command = plan
  variables {
    masters = 1
  }
  expect_failures = [var.masters]
}

run "zero_max_lock_ttl" {
  command = plan
  variables {
    max_lock_ttl = "0s"
  }
  expect_failures = [var.max_lock_ttl]
}

run "name_prefix_with_uppercase" {
  command = plan
  variables {
    name_prefix = "Locks"
  }
  expect_failures = [var.name_prefix]
}

run "bind_address_not_ipv4" {
  command = plan
  variables {
    bind_addresses = ["localhost"]
  }
  expect_failures = [var.bind_addresses]
}

run "tenants_plan" {
  command = plan
  variables {
    lock_users = {
      billing = { key_prefix = "billing:" }
      orders  = { key_prefix = "orders:" }
    }
  }
  assert {
    condition     = length(redlock_credentials.tenant) == 2
    error_message = "one set of credentials per lock user"
  }
  assert {
    condition     = output.lock_user == null
    error_message = "with lock_users there is no single lock user"
  }
}

run "tenant_prefixes_overlap" {
  command = plan
  variables {
    lock_users = {
      bill    = { key_prefix = "bill" }
      billing = { key_prefix = "billing:" }
    }
  }
  expect_failures = [var.lock_users]
}

run "tenant_prefix_is_a_glob" {
  command = plan
  variables {
    lock_users = { billing = { key_prefix = "bill*" } }
  }
  expect_failures = [var.lock_users]
}

run "tenant_named_default" {
  command = plan
  variables {
    lock_users = { default = { key_prefix = "x:" } }
  }
  expect_failures = [var.lock_users]
}

run "tls_plan" {
  command = plan
  variables {
    tls = true
  }

  assert {
    condition     = length(redlock_ca.this) == 1 && length(redlock_server_certificate.this) == 5
    error_message = "tls = true makes one CA and one server certificate per master"
  }
  assert {
    condition     = alltrue([for m in redlock_master.this : m.tls])
    error_message = "every master serves TLS"
  }
  assert {
    condition     = alltrue([for c in redlock_server_certificate.this : c.ip_addresses == tolist(["127.67.0.1"])])
    error_message = "each certificate covers its master's bind address"
  }
}

run "monitoring_plan" {
  command = plan

  assert {
    condition     = output.monitor_user == "redlock-monitor" && alltrue([for m in redlock_master.this : m.monitor_user == "redlock-monitor"])
    error_message = "every master gets the monitoring user"
  }
}
