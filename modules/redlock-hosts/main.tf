# Five (or any odd number >= 3) Redlock masters, one per host the user runs: this module
# renders each host's cloud-init user-data (Debian's redis-server or valkey-server under
# systemd, with a fail-closed delayed restart) and audits the endpoints on every plan.
# It creates no instances: pass user_data to your cloud's instance resource. Its passwords
# are kept in the state (modules/redlock-hosts-write-only keeps them out, Terraform >= 1.11).

locals {
  # redlock_users (shared_users.tf) logs in with the admin password from the state.
  live_admin_password    = redlock_credentials.this.admin_password
  live_admin_password_wo = null
  ca_key_file            = null # the CA's key in the state
  server_key_dir         = null # the server keys in the state (and each in its host's user-data)
}

# Every plan audits the deployment once the hosts answer: drift (a CONFIG SET on a host) or
# an unsafe setting shows as a warning naming the master, the setting and the fix.
check "redlock_deployment" {
  data "redlock_audit" "this" {
    endpoints     = local.endpoints
    username      = "default"
    password      = redlock_credentials.this.admin_password
    lock_username = local.audit_user
    lock_password = local.audit_password
    max_lock_ttl  = var.max_lock_ttl
    restart_delay = "${local.min_restart_delay_ms}ms"
    tls           = var.tls
    ca_cert_pem   = local.ca_cert_pem
  }

  assert {
    condition     = data.redlock_audit.this.safe
    error_message = "The Redlock deployment is not safe: ${join(" ", data.redlock_audit.this.problems)}"
  }
}
