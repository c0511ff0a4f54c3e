locals {
  ca_key_file    = null # the CA's key in the state
  server_key_dir = null # the server keys in the state
}

resource "redlock_master" "this" {
  count = var.masters

  name                 = "${var.name_prefix}-${count.index}"
  bind                 = local.binds[count.index]
  port                 = local.ports[count.index]
  data_dir             = local.data_dirs[count.index]
  server_binary        = var.server_binary
  max_lock_ttl         = var.max_lock_ttl
  restart_delay        = var.restart_delay
  maxmemory            = var.maxmemory
  keep_data_on_destroy = var.keep_data_on_destroy

  admin_password = redlock_credentials.this.admin_password
  lock_user      = local.tenants ? null : redlock_credentials.this.lock_user
  lock_password  = local.tenants ? null : redlock_credentials.this.lock_password
  lock_users     = local.lock_users

  monitor_user     = var.monitor_user
  monitor_password = redlock_credentials.monitor.lock_password

  tls             = var.tls
  tls_cert_pem    = var.tls ? redlock_server_certificate.this[count.index].cert_pem : null
  tls_key_pem     = var.tls ? redlock_server_certificate.this[count.index].private_key_pem : null
  tls_ca_cert_pem = local.ca_cert_pem

  hooks = {
    on_crash       = var.hooks.on_crash
    before_restart = var.hooks.before_restart
    after_restart  = var.hooks.after_restart
  }

  lifecycle {
    precondition {
      condition     = length(local.placement_problems) == 0
      error_message = join(" ", local.placement_problems)
    }
  }
}

# The deployment is checked as a whole once every master is up: an unsafe cluster fails
# the apply instead of being discovered by the first lock that goes wrong.
data "redlock_audit" "this" {
  endpoints     = local.endpoints
  username      = "default"
  password      = redlock_credentials.this.admin_password
  lock_username = local.audit_user
  lock_password = local.audit_password
  max_lock_ttl  = var.max_lock_ttl
  # The shortest delay is the one that must cover max_lock_ttl plus drift.
  restart_delay = "${local.min_restart_delay_ms}ms"
  tls           = var.tls
  ca_cert_pem   = local.ca_cert_pem

  depends_on = [redlock_master.this]

  lifecycle {
    postcondition {
      condition     = self.safe
      error_message = "The Redlock deployment is not safe: ${join(" ", self.problems)}"
    }
  }
}
