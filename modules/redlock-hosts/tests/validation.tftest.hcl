# Plan-time refusals and the outputs of the hosts module. The hosts are loopback addresses on
# which nothing listens, so the check block's audit contacts nothing else; no instance is
# created by this module in any case. Loopback addresses make check.host_addresses warn (an
# expected failure in every run that plans past the variables); warnings.tftest.hcl proves
# each warning and the plan without one.

variables {
  hosts = [
    { name = "a", address = "127.66.0.11", failure_domain = "zone-a" },
    { name = "b", address = "127.66.0.12", failure_domain = "zone-b" },
    { name = "c", address = "127.66.0.13", failure_domain = "zone-c" },
    { name = "d", address = "127.66.0.14", failure_domain = "zone-d" },
    { name = "e", address = "127.66.0.15", failure_domain = "zone-e", server = "valkey-server" },
  ]
  max_lock_ttl = "1m30s"
}

run "outputs_of_five_hosts" {
  command = apply

  # Nothing serves on these addresses yet: the audit's check must say the deployment is
  # not safe (a warning in plan and apply; an expected failure here).
  expect_failures = [check.redlock_deployment, check.host_addresses]

  assert {
    condition     = output.quorum == 3
    error_message = "quorum of five hosts must be 3"
  }
  assert {
    condition     = output.endpoints == ["127.66.0.11:6379", "127.66.0.12:6379", "127.66.0.13:6379", "127.66.0.14:6379", "127.66.0.15:6379"]
    error_message = "endpoints must follow var.hosts, port 6379"
  }
  assert {
    condition     = output.restart_delay_ms == 91002
    error_message = "restart_delay_ms must be max_lock_ttl (90s) + its drift margin (1% + 102ms = 1.002s)"
  }
  assert {
    condition     = output.units == ["redis-server.service", "redis-server.service", "redis-server.service", "redis-server.service", "valkey-server.service"]
    error_message = "a host's server overrides var.server"
  }
  assert {
    # With the exporters (the default) the plain form passes 16 KiB; the gzip form (what the
    # cloud is then given) fits: 16384 bytes are 21848 in base64.
    condition     = alltrue([for i, u in output.user_data : startswith(u, "#cloud-config\n") && length(output.user_data_base64_gzip[i]) <= 21848])
    error_message = "every user_data is #cloud-config within the user-data limit"
  }
  assert {
    condition     = jsondecode(output.client_config).username == "redlock" && !can(jsondecode(output.client_config).admin_password)
    error_message = "client_config carries the lock user only, never the admin password"
  }
  assert {
    condition     = jsondecode(output.agent_config).admin_username == "default" && length(jsondecode(output.agent_config).endpoints) == 5
    error_message = "agent_config carries the admin credentials and every endpoint"
  }
}

run "even_number_of_hosts" {
  command = plan
  variables {
    hosts = [
      { name = "a", address = "127.66.0.11" },
      { name = "b", address = "127.66.0.12" },
      { name = "c", address = "127.66.0.13" },
      { name = "d", address = "127.66.0.14" },
    ]
  }
  expect_failures = [var.hosts]
}

run "fewer_than_three_hosts" {
  command = plan
  variables {
    hosts = [{ name = "a", address = "127.66.0.11" }]
  }
  expect_failures = [var.hosts]
}

run "duplicated_address" {
  command = plan
  variables {
    hosts = [
      { name = "a", address = "127.66.0.11" },
      { name = "b", address = "127.66.0.11" },
      { name = "c", address = "127.66.0.13" },
    ]
  }
  expect_failures = [var.hosts]
}

run "address_not_ipv4" {
  command = plan
  variables {
    hosts = [
      { name = "a", address = "lock-a.example.com" },
      { name = "b", address = "127.66.0.12" },
      { name = "c", address = "127.66.0.13" },
    ]
  }
  expect_failures = [var.hosts]
}

run "unknown_server_package" {
  command = plan
  variables {
    server = "keydb"
  }
  expect_failures = [var.server, check.host_addresses]
}

run "max_lock_ttl_not_a_duration" {
  command = plan
  variables {
    max_lock_ttl = "30"
  }
  expect_failures = [var.max_lock_ttl, check.host_addresses]
}

run "tenants_outputs" {
  command         = apply
  expect_failures = [check.redlock_deployment, check.host_addresses] # nothing serves on these addresses
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
  assert {
    condition     = keys(output.client_configs) == ["billing", "orders"]
    error_message = "one client config per lock user"
  }
  assert {
    condition = alltrue([for name, c in output.client_configs :
      jsondecode(c).username == name && jsondecode(c).key_prefix == "${name}:" && !can(jsondecode(c).admin_password)
    ])
    error_message = "each client config carries its user and prefix, and no admin secret"
  }
  assert {
    # The host's ACL file as rendered (the user-data may carry it gzipped).
    condition = alltrue([for h in data.redlock_host_config.this :
      strcontains(h.files["/etc/redlock/users.acl"], "user billing reset on #") && strcontains(h.files["/etc/redlock/users.acl"], "~billing:* resetchannels &billing:*") && !strcontains(h.files["/etc/redlock/users.acl"], "user redlock ")
    ])
    error_message = "every host defines the tenants, confined to their prefixes, and no all-keys lock user"
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
  expect_failures = [var.lock_users, check.host_addresses]
}

run "tenant_prefix_is_a_glob" {
  command = plan
  variables {
    lock_users = { billing = { key_prefix = "bill*" } }
  }
  expect_failures = [var.lock_users, check.host_addresses]
}

run "tenant_named_default" {
  command = plan
  variables {
    lock_users = { default = { key_prefix = "x:" } }
  }
  expect_failures = [var.lock_users, check.host_addresses]
}

run "tls_hosts" {
  command = apply
  variables {
    tls = true
  }

  expect_failures = [check.redlock_deployment, check.host_addresses]

  assert {
    condition     = length(redlock_server_certificate.this) == 5 && startswith(output.ca_cert_pem, "-----BEGIN CERTIFICATE-----")
    error_message = "tls = true makes one CA and one server certificate per host"
  }
  assert {
    condition     = jsondecode(nonsensitive(output.client_config)).tls && jsondecode(nonsensitive(output.client_config)).ca_cert_pem == output.ca_cert_pem
    error_message = "the client config carries tls = true and the CA certificate"
  }
  assert {
    condition     = !strcontains(nonsensitive(output.client_config), "PRIVATE KEY")
    error_message = "the client config must never carry a private key"
  }
  assert {
    # The plain form passes 16 KiB with TLS; the gzip form (what the cloud is then given)
    # fits: 16384 bytes are 21848 in base64.
    condition     = alltrue([for i, u in output.user_data : strcontains(u, "tls-port 6379") && strcontains(u, "path: /etc/redlock/tls-server.key") && length(output.user_data_base64_gzip[i]) <= 21848])
    error_message = "every host serves TLS on port 6379 with its key under /etc/redlock, within the user-data limit"
  }
}

run "monitoring_outputs" {
  command = apply

  expect_failures = [check.redlock_deployment, check.host_addresses]

  assert {
    condition     = output.monitor_user == "redlock-monitor" && length(nonsensitive(output.monitor_password)) >= 16
    error_message = "every host gets the monitoring user with a generated password"
  }
  assert {
    condition     = nonsensitive(output.monitor_password) != nonsensitive(output.admin_password) && !strcontains(nonsensitive(output.client_config), nonsensitive(output.monitor_password))
    error_message = "the monitoring password is its own, and never in a lock client's config"
  }
  assert {
    condition     = output.scrape_targets.redis[0].targets == ["127.66.0.11:9121"] && output.scrape_targets.node[4].labels.master == "e"
    error_message = "scrape_targets name each host's exporters with its master's name"
  }
  assert {
    condition     = alltrue([for i, u in output.user_data : strcontains(u, "- prometheus-redis-exporter") && strcontains(u, "path: /etc/redlock/redis-exporter.env") && length(output.user_data_base64_gzip[i]) <= 21848])
    error_message = "exporters are on by default, within the user-data limit"
  }
}

run "exporters_off" {
  command = apply
  variables {
    exporters = false
  }

  expect_failures = [check.redlock_deployment, check.host_addresses]

  assert {
    condition     = alltrue([for i, u in output.user_data : !strcontains(u, "exporter") && length(output.user_data_base64_gzip[i]) <= 21848]) && length(output.scrape_targets.redis) == 0
    error_message = "exporters = false installs no exporter and lists no target, within the user-data limit (its gzip form: the plain one passes 16 KiB)"
  }
}
