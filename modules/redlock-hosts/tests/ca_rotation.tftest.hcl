# Moving to a new CA through the module (the day-2 guide's "Rotate certificates"): add the new
# CA beside the old (clients trust both), move the hosts to it one at a time, then drop the
# old CA. The runs apply in order on one state, as an operator's applies would. The hosts are
# loopback addresses on which nothing listens: the audit's check block is expected to fail,
# and no instance is created by this module in any case.

variables {
  tls = true
  hosts = [
    { name = "a", address = "127.66.2.11" },
    { name = "b", address = "127.66.2.12" },
    { name = "c", address = "127.66.2.13" },
  ]
}

run "one_ca" {
  command         = apply
  expect_failures = [check.redlock_deployment, check.host_addresses, check.failure_domains]

  assert {
    condition     = keys(redlock_ca.this) == ["1"] && output.ca_cert_pem == redlock_ca.this["1"].cert_pem
    error_message = "by default there is one CA, named \"1\", and the clients' bundle is its certificate"
  }
  assert {
    condition     = output.tls_server_cas == ["1", "1", "1"] && alltrue([for c in redlock_server_certificate.this : c.ca_cert_pem == redlock_ca.this["1"].cert_pem])
    error_message = "every host's certificate is signed by CA \"1\""
  }
}

# Step 1: the new CA beside the old. Every host names the CA it serves from (still "1"): no
# certificate and no user-data changes, only the clients' bundle.
run "overlap_begins" {
  command         = apply
  expect_failures = [check.redlock_deployment, check.host_addresses, check.failure_domains]
  variables {
    tls_cas = ["1", "2"]
    hosts = [
      { name = "a", address = "127.66.2.11", tls_ca = "1" },
      { name = "b", address = "127.66.2.12", tls_ca = "1" },
      { name = "c", address = "127.66.2.13", tls_ca = "1" },
    ]
  }

  assert {
    condition     = keys(redlock_ca.this) == ["1", "2"] && redlock_ca.this["1"].cert_pem == run.one_ca.ca_cert_pem && redlock_ca.this["1"].cert_pem != redlock_ca.this["2"].cert_pem
    error_message = "the new CA \"2\" is made beside the old one, which is kept as it was"
  }
  assert {
    condition     = output.ca_cert_pem == "${redlock_ca.this["1"].cert_pem}${redlock_ca.this["2"].cert_pem}" && length(regexall("-----BEGIN CERTIFICATE-----", output.ca_cert_pem)) == 2
    error_message = "during the overlap the clients' bundle holds both CAs, old first"
  }
  assert {
    condition     = alltrue([for name, c in output.client_configs : jsondecode(c).ca_cert_pem == output.ca_cert_pem])
    error_message = "every client config carries the bundle of both CAs"
  }
  assert {
    condition     = alltrue([for c in redlock_server_certificate.this : c.ca_cert_pem == redlock_ca.this["1"].cert_pem])
    error_message = "adding the new CA re-signs no host's certificate"
  }
  assert {
    condition     = nonsensitive(output.user_data) == nonsensitive(run.one_ca.user_data)
    error_message = "adding the new CA changes no host's user-data (the running hosts need nothing)"
  }
  assert {
    condition     = redlock_ca.this["2"].common_name == "redlock-hosts CA 2" && redlock_ca.this["1"].common_name == "redlock-hosts CA"
    error_message = "the two CAs have distinct names"
  }
}

# Step 2, host by host (here the first): its certificate from the new CA; the others stay.
run "first_host_moves" {
  command         = apply
  expect_failures = [check.redlock_deployment, check.host_addresses, check.failure_domains]
  variables {
    tls_cas = ["1", "2"]
    hosts = [
      { name = "a", address = "127.66.2.11", tls_ca = "2" },
      { name = "b", address = "127.66.2.12", tls_ca = "1" },
      { name = "c", address = "127.66.2.13", tls_ca = "1" },
    ]
  }

  assert {
    condition     = output.tls_server_cas == ["2", "1", "1"]
    error_message = "tls_server_cas names each host's CA"
  }
  # Each certificate chains to the CA its host names: the provider signed it with that CA's key
  # (its ca_cert_pem), and redlock_host_config checked it against the CA it renders for the host.
  assert {
    condition     = redlock_server_certificate.this[0].ca_cert_pem == redlock_ca.this["2"].cert_pem && data.redlock_host_config.this[0].tls_ca_cert_pem == redlock_ca.this["2"].cert_pem
    error_message = "the moved host's certificate is signed by the new CA, and its host config carries that CA"
  }
  assert {
    condition     = alltrue([for i in [1, 2] : redlock_server_certificate.this[i].ca_cert_pem == redlock_ca.this["1"].cert_pem && data.redlock_host_config.this[i].tls_ca_cert_pem == redlock_ca.this["1"].cert_pem])
    error_message = "the hosts not moved keep their certificates from the old CA"
  }
  assert {
    condition     = nonsensitive(output.user_data[0]) != nonsensitive(run.overlap_begins.user_data[0]) && nonsensitive(slice(output.user_data, 1, 3)) == nonsensitive(slice(run.overlap_begins.user_data, 1, 3))
    error_message = "only the moved host's user-data changes"
  }
  assert {
    condition     = strcontains(nonsensitive(output.user_data[0]), replace(trimspace(redlock_server_certificate.this[0].cert_pem), "\n", "\n      "))
    error_message = "the moved host's user-data carries its new certificate"
  }
  assert {
    condition     = output.ca_cert_pem == "${redlock_ca.this["1"].cert_pem}${redlock_ca.this["2"].cert_pem}"
    error_message = "the bundle still holds both CAs while hosts move"
  }
}

# Negative control: dropping the old CA while a host still serves from it is refused at plan.
run "refused_drop_while_a_host_uses_the_old_ca" {
  command         = plan
  expect_failures = [redlock_server_certificate.this[1], redlock_server_certificate.this[2], check.host_addresses, check.failure_domains]
  variables {
    tls_cas = ["2"]
    hosts = [
      { name = "a", address = "127.66.2.11", tls_ca = "2" },
      { name = "b", address = "127.66.2.12", tls_ca = "1" },
      { name = "c", address = "127.66.2.13", tls_ca = "1" },
    ]
  }
}

# Negative control: a host moved to a CA the clients' bundle does not hold yet.
run "refused_host_on_a_ca_not_in_the_bundle" {
  command         = plan
  expect_failures = [redlock_server_certificate.this[2], check.host_addresses, check.failure_domains]
  variables {
    tls_cas = ["1", "2"]
    hosts = [
      { name = "a", address = "127.66.2.11", tls_ca = "2" },
      { name = "b", address = "127.66.2.12", tls_ca = "1" },
      { name = "c", address = "127.66.2.13", tls_ca = "3" },
    ]
  }
}

# Negative control: with two CAs a host that names none is refused (which one it serves from
# is the operator's to say; the default could not follow a later change of tls_cas safely).
run "refused_host_without_tls_ca_during_overlap" {
  command         = plan
  expect_failures = [redlock_server_certificate.this[1], check.host_addresses, check.failure_domains]
  variables {
    tls_cas = ["1", "2"]
    hosts = [
      { name = "a", address = "127.66.2.11", tls_ca = "2" },
      { name = "b", address = "127.66.2.12" },
      { name = "c", address = "127.66.2.13", tls_ca = "1" },
    ]
  }
}

run "last_hosts_move" {
  command         = apply
  expect_failures = [check.redlock_deployment, check.host_addresses, check.failure_domains]
  variables {
    tls_cas = ["1", "2"]
    hosts = [
      { name = "a", address = "127.66.2.11", tls_ca = "2" },
      { name = "b", address = "127.66.2.12", tls_ca = "2" },
      { name = "c", address = "127.66.2.13", tls_ca = "2" },
    ]
  }
  assert {
    condition     = output.tls_server_cas == ["2", "2", "2"] && nonsensitive(output.user_data[0]) == nonsensitive(run.first_host_moves.user_data[0])
    error_message = "every host is on the new CA; the first host's certificate is kept"
  }
}

# Step 3: the old CA goes. No certificate and no user-data changes, only the clients' bundle.
run "old_ca_dropped" {
  command         = apply
  expect_failures = [check.redlock_deployment, check.host_addresses, check.failure_domains]
  variables {
    tls_cas = ["2"]
    hosts = [
      { name = "a", address = "127.66.2.11", tls_ca = "2" },
      { name = "b", address = "127.66.2.12", tls_ca = "2" },
      { name = "c", address = "127.66.2.13", tls_ca = "2" },
    ]
  }

  assert {
    condition     = keys(redlock_ca.this) == ["2"] && endswith(run.last_hosts_move.ca_cert_pem, redlock_ca.this["2"].cert_pem)
    error_message = "only the new CA is left, the same one the hosts moved to"
  }
  assert {
    condition     = output.ca_cert_pem == redlock_ca.this["2"].cert_pem && length(regexall("-----BEGIN CERTIFICATE-----", output.ca_cert_pem)) == 1
    error_message = "the clients' bundle is the new CA only"
  }
  assert {
    condition     = alltrue([for name, c in output.client_configs : jsondecode(c).ca_cert_pem == redlock_ca.this["2"].cert_pem])
    error_message = "every client config trusts the new CA only"
  }
  assert {
    condition     = nonsensitive(output.user_data) == nonsensitive(run.last_hosts_move.user_data)
    error_message = "dropping the old CA changes no host's user-data"
  }
}

# Once one CA is left, the hosts' tls_ca may go: it is that CA, with no change.
run "tls_ca_optional_with_one_ca" {
  command         = plan
  expect_failures = [check.redlock_deployment, check.host_addresses, check.failure_domains]
  variables {
    tls_cas = ["2"]
  }
  assert {
    condition     = output.tls_server_cas == ["2", "2", "2"] && nonsensitive(output.user_data) == nonsensitive(run.old_ca_dropped.user_data)
    error_message = "with one CA a host without tls_ca is on it, unchanged"
  }
}

run "tls_cas_names_refused" {
  command = plan
  variables {
    tls_cas = ["1", "2", "3"]
  }
  expect_failures = [var.tls_cas, check.host_addresses, check.failure_domains]
}
