# Shared by: redlock-cluster-write-only redlock-hosts-write-only
# Every plan audits the deployment once the masters answer. The audit is ephemeral (it logs
# in with the admin password); Terraform refuses ephemeral values in error messages, so its
# problems are in the warning it adds.
ephemeral "redlock_audit" "this" {
  endpoints     = local.endpoints
  username      = "default"
  password      = ephemeral.redlock_credentials.this.admin_password
  lock_username = local.audit_user
  lock_password = local.audit_password
  max_lock_ttl  = var.max_lock_ttl
  restart_delay = "${local.min_restart_delay_ms}ms"
  tls           = var.tls
  ca_cert_pem   = local.ca_cert_pem
}

check "redlock_deployment" {
  assert {
    condition     = ephemeral.redlock_audit.this.safe
    error_message = "The Redlock deployment is not safe: the warning \"The Redlock deployment is not safe\" above says why."
  }
}
