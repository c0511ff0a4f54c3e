# modules/redlock-cluster with no password in the state (Terraform >= 1.11): the same local
# masters, their passwords kept in files under secrets_dir (shared_write_only_credentials.tf)
# and given to the masters write-only, the audit (shared_write_only_audit.tf) and the client
# configs ephemeral.

locals {
  # The masters take every password write-only, the monitoring one too; the servers' TLS
  # keys are in the state (redlock_master takes tls_key_pem from the certificate).
  server_key_dir = null

  # The masters' password_wo_version: any new credentials set (a newer version) rotates.
  credentials_version = max(concat([redlock_credentials.this.version, redlock_credentials.monitor.version],
  [for t in redlock_credentials.tenant : t.version])...)
  lock_users = local.tenants ? {
    for name, u in var.lock_users : name => { key_prefix = u.key_prefix, allow_eval = u.allow_eval }
  } : null
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

  # Every secret write-only: in no plan and no state. The masters keep them in their data
  # dirs (0600); a new credentials set (a new version) rotates them in place.
  admin_password_wo      = ephemeral.redlock_credentials.this.admin_password
  lock_user              = local.tenants ? null : redlock_credentials.this.lock_user
  lock_password_wo       = local.tenants ? null : ephemeral.redlock_credentials.this.lock_password
  lock_users             = local.lock_users
  lock_user_passwords_wo = local.tenants ? { for name in keys(var.lock_users) : name => ephemeral.redlock_credentials.tenant[name].lock_password } : null
  monitor_user           = var.monitor_user
  monitor_password_wo    = local.monitor_password
  password_wo_version    = local.credentials_version

  tls             = var.tls
  tls_cert_pem    = var.tls ? redlock_server_certificate.this[count.index].cert_pem : null
  tls_key_pem_wo  = var.tls ? redlock_server_certificate.this[count.index].private_key_pem : null
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
