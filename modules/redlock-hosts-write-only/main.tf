# modules/redlock-hosts with no password in the state (Terraform >= 1.11): the same hosts
# and user-data (shared_*.tf), the passwords kept in files under secrets_dir (credentials.tf),
# the audit and the client configs ephemeral. It creates no instances: pass user_data to
# your cloud's instance resource.

# Every plan audits the deployment once the hosts answer. The audit is ephemeral (it logs in
# with the admin password); Terraform refuses ephemeral values in error messages, so its
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
