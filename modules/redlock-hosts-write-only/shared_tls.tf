# Generated from modules/.shared/tls.tf by scripts/module-shared.sh (make module-docs): edit that file,
# not this copy; make check-docs fails when they differ.
# Shared by: redlock-cluster redlock-hosts redlock-hosts-write-only redlock-cluster-write-only
# TLS: the CA and the server certificates.

# TLS (var.tls): one CA for the deployment and one server certificate per master, for the
# address it listens on. The private keys are in the state (and in each rendered host's
# user_data): keep both secret.
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
}

locals {
  # What lock clients verify the masters against; null without TLS.
  ca_cert_pem = var.tls ? redlock_ca.this[0].cert_pem : null
}

output "ca_cert_pem" {
  description = "PEM certificate of the deployment's CA (tls = true; null otherwise): what lock clients trust (`lockagent --cacert`, the client configs' `ca_cert_pem`). Not a secret."
  value       = local.ca_cert_pem
}
