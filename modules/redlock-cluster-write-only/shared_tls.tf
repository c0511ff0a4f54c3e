# Generated from modules/.shared/tls.tf by scripts/module-shared.sh (make module-docs): edit that file,
# not this copy; make check-docs fails when they differ.
# Shared by: redlock-cluster redlock-hosts redlock-hosts-write-only redlock-cluster-write-only
# TLS: the CA and the server certificates.

# TLS (var.tls): one CA for the deployment and one server certificate per master, for the
# address it listens on. The private keys are in the state (and in each rendered host's
# user_data) unless the module keeps them in files: local.ca_key_file, and
# local.server_key_dir (then the hosts' provisioning delivers each server key).
resource "redlock_ca" "this" {
  count            = var.tls ? 1 : 0
  common_name      = local.ca_common_name
  private_key_file = local.ca_key_file # null: the key in the state
}

resource "redlock_server_certificate" "this" {
  count = var.tls ? length(local.master_addresses) : 0

  ca_cert_pem         = redlock_ca.this[0].cert_pem
  ca_private_key_pem  = local.ca_key_file == null ? redlock_ca.this[0].private_key_pem : null
  ca_private_key_file = local.ca_key_file
  ip_addresses        = [local.master_addresses[count.index]]
  private_key_file    = local.server_key_dir == null ? null : "${local.server_key_dir}/server-${local.master_addresses[count.index]}.key"
}

locals {
  # What lock clients verify the masters against; null without TLS.
  ca_cert_pem = var.tls ? redlock_ca.this[0].cert_pem : null
}

output "tls_server_key_files" {
  description = "With tls and server keys kept in files (modules/redlock-hosts-write-only), each master's key file on the machine that runs Terraform, in master order: deliver each to its host at /etc/redlock/tls-server.key (your provisioning: a secrets manager, configuration management, scp); the master stays down until it is there. Null otherwise."
  value       = var.tls && local.server_key_dir != null ? redlock_server_certificate.this[*].private_key_file : null
}

output "ca_cert_pem" {
  description = "PEM certificate of the deployment's CA (tls = true; null otherwise): what lock clients trust (`lockagent --cacert`, the client configs' `ca_cert_pem`). Not a secret."
  value       = local.ca_cert_pem
}
