# live_users: the tenants become a redlock_users over every endpoint. Nothing serves on
# these loopback addresses, so the runs plan (an apply would reach for the masters) after
# one apply that makes the credentials.

variables {
  hosts = [
    { name = "a", address = "127.66.1.11" },
    { name = "b", address = "127.66.1.12" },
    { name = "c", address = "127.66.1.13" },
  ]
  lock_users = {
    billing = { key_prefix = "billing:", allow_eval = true }
    orders  = { key_prefix = "orders:" }
  }
}

run "tenants_rendered" {
  command         = apply
  expect_failures = [check.redlock_deployment, check.host_addresses, check.failure_domains] # nothing serves on these addresses
  assert {
    condition     = length(redlock_users.live) == 0 && output.live_users_acl == {}
    error_message = "live_users is off by default: no redlock_users"
  }
  assert {
    # The host's files, as rendered (the user-data may carry the ACL file gzipped).
    condition     = alltrue([for h in data.redlock_host_config.this : can(regex("user billing [^\n]*\\+eval", h.files["/etc/redlock/users.acl"])) && !can(regex("user orders [^\n]*\\+eval", h.files["/etc/redlock/users.acl"]))])
    error_message = "allow_eval gives EVAL to that tenant only, in every host's ACL file"
  }
}

run "live_users_plans_the_tenants" {
  command         = plan
  expect_failures = [check.redlock_deployment, check.host_addresses, check.failure_domains]
  variables {
    live_users = true
  }
  assert {
    condition     = length(redlock_users.live) == 1 && join(",", keys(redlock_users.live[0].users)) == "billing,orders"
    error_message = "live_users with two tenants plans one redlock_users with both"
  }
  assert {
    condition     = redlock_users.live[0].users.billing.key_prefix == "billing:" && join(",", redlock_users.live[0].endpoints) == "127.66.1.11:6379,127.66.1.12:6379,127.66.1.13:6379"
    error_message = "redlock_users covers every endpoint with each tenant's prefix"
  }
  assert {
    condition     = redlock_users.live[0].users.billing.allow_eval && !redlock_users.live[0].users.orders.allow_eval
    error_message = "allow_eval reaches the live users"
  }
  assert {
    condition     = redlock_users.live[0].users.billing.password_sha256 == sha256(redlock_credentials.tenant["billing"].lock_password)
    error_message = "the masters get the SHA-256 of the tenant's password"
  }
}

run "live_users_needs_tenants" {
  command = plan
  variables {
    live_users = true
    lock_users = {}
  }
  expect_failures = [redlock_users.live, check.redlock_deployment, check.host_addresses, check.failure_domains]
}

run "seed_fences_renders_the_users_off" {
  command         = plan
  expect_failures = [check.redlock_deployment, check.host_addresses, check.failure_domains]
  variables {
    live_users  = true
    seed_fences = true
  }
  assert {
    condition     = alltrue(data.redlock_host_config.this[*].seed_fences)
    error_message = "seed_fences reaches every host's config"
  }
  assert {
    condition     = alltrue([for h in data.redlock_host_config.this : can(regex("user billing [^\n]*\\boff\\b", h.files["/etc/redlock/users.acl"])) && can(regex("user orders [^\n]*\\boff\\b", h.files["/etc/redlock/users.acl"]))])
    error_message = "with seed_fences every host starts with its lock users off, until redlock_users seeds it"
  }
}

run "seed_fences_needs_live_users" {
  command = plan
  variables {
    seed_fences = true
  }
  expect_failures = [output.endpoints, check.redlock_deployment, check.host_addresses, check.failure_domains]
}
