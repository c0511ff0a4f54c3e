# Generated from modules/.shared/tls.tf by scripts/module-shared.sh (make module-docs): edit that file,
# not this copy; make check-docs fails when they differ.
# Shared by: redlock-cluster redlock-hosts redlock-hosts-write-only redlock-cluster-write-only
# TLS: the CAs, the server certificates and the CA bundle clients verify the masters against.

# TLS (var.tls): the deployment's CAs by name (local.tls_cas: one, or two while the masters
# move to a new CA) and one server certificate per master, for the address it listens on,
# signed by the CA local.master_tls_cas names for it. Clients, redlock_users and the audit
# trust every CA in local.tls_cas (local.ca_cert_pem, a bundle), so a master may move to the
# new CA only once the clients have it, and the old CA may go only once no master uses it.
# The private keys are in the state (and in each rendered host's user_data) unless the module
# keeps them in files: local.ca_key_file, and local.server_key_dir (then the hosts'
# provisioning delivers each server key). The module sets local.tls_cas, local.master_tls_cas
# and local.master_tls_ca_problems (one message per master whose CA is not in tls_cas, "" if
# it is).

# The CA these modules made before they named their CAs is the one named "1": it keeps its
# common name and key file, so the state moves with no change.
moved {
  from = redlock_ca.this[0]
  to   = redlock_ca.this["1"]
}

resource "redlock_ca" "this" {
  for_each = toset(var.tls ? local.tls_cas : [])

  common_name      = each.key == "1" ? local.ca_common_name : "${local.ca_common_name} ${each.key}"
  private_key_file = local.ca_key_file == null ? null : (each.key == "1" ? local.ca_key_file : "${dirname(local.ca_key_file)}/ca-${each.key}.key") # null: the key in the state
}

locals {
  tls_ca_cert_pems = { for name, ca in redlock_ca.this : name => ca.cert_pem }
  # Each master's CA certificate (what its certificate chains to): null without TLS, and for a
  # master whose CA is not in tls_cas (which redlock_server_certificate.this refuses).
  master_ca_cert_pems = [for name in local.master_tls_cas : lookup(local.tls_ca_cert_pems, name, null)]
}

resource "redlock_server_certificate" "this" {
  count = var.tls ? length(local.master_addresses) : 0

  ca_cert_pem         = local.master_ca_cert_pems[count.index]
  ca_private_key_pem  = local.ca_key_file == null ? redlock_ca.this[local.master_tls_cas[count.index]].private_key_pem : null
  ca_private_key_file = local.ca_key_file == null ? null : redlock_ca.this[local.master_tls_cas[count.index]].private_key_file
  ip_addresses        = [local.master_addresses[count.index]]
  private_key_file    = local.server_key_dir == null ? null : "${local.server_key_dir}/server-${local.master_addresses[count.index]}.key"

  lifecycle {
    # A certificate from a CA the clients' bundle lacks would cut every client off that master.
    precondition {
      condition     = local.master_tls_ca_problems[count.index] == ""
      error_message = local.master_tls_ca_problems[count.index]
    }
  }
}

locals {
  # What lock clients, redlock_users and the audit verify the masters against: every CA in
  # tls_cas, their PEM certificates concatenated, in tls_cas order; null without TLS.
  ca_cert_pem = var.tls ? join("", [for name in local.tls_cas : local.tls_ca_cert_pems[name]]) : null
}

output "tls_server_key_files" {
  description = "With tls and server keys kept in files (modules/redlock-hosts-write-only), each master's key file on the machine that runs Terraform, in master order: deliver each to its host at /etc/redlock/tls-server.key (your provisioning: a secrets manager, configuration management, scp); the master stays down until it is there. Null otherwise."
  value       = var.tls && local.server_key_dir != null ? redlock_server_certificate.this[*].private_key_file : null
}

output "ca_cert_pem" {
  description = "The CA bundle lock clients trust (tls = true; null otherwise): the PEM certificates of its CAs concatenated (two while the hosts modules move to a new CA: tls_cas) (`lockagent --cacert`, the client configs' `ca_cert_pem`). Not a secret."
  value       = local.ca_cert_pem
}
