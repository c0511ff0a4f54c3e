# The passwords live in files under secrets_dir, never in the state, which gets their
# SHA-256 hashes: what the hosts (redlock_host_config) and redlock_users need. Where a
# password itself is needed (the audit, live users' admin login, the client configs), the
# ephemeral redlock_credentials reads it back from its file, into no plan and no state.
locals {
  secrets_dir = var.secrets_dir != null ? var.secrets_dir : "${abspath(path.root)}/.redlock-secrets"
}

resource "redlock_credentials" "this" {
  lock_user = local.lock_user
  keepers   = local.credentials_keepers
  file      = "${local.secrets_dir}/admin.json"
}

# For your own exporters; with var.exporters, redis_exporter on each host logs in with a
# password the host makes at first boot, which never leaves it.
resource "redlock_credentials" "monitor" {
  lock_user = var.monitor_user
  keepers   = local.credentials_keepers
  file      = "${local.secrets_dir}/monitor.json"
}

resource "redlock_credentials" "tenant" {
  for_each  = var.lock_users
  lock_user = each.key
  keepers   = local.credentials_keepers
  file      = "${local.secrets_dir}/tenant-${each.key}.json"
}

# version is unknown until the file exists, so Terraform opens these after the files are made.
ephemeral "redlock_credentials" "this" {
  file    = redlock_credentials.this.file
  version = redlock_credentials.this.version
}

ephemeral "redlock_credentials" "monitor" {
  count   = 1 # outputs.tf reads [0]
  file    = redlock_credentials.monitor.file
  version = redlock_credentials.monitor.version
}

ephemeral "redlock_credentials" "tenant" {
  for_each = var.lock_users
  file     = redlock_credentials.tenant[each.key].file
  version  = redlock_credentials.tenant[each.key].version
}

locals {
  # The lock user the audit logs in as: the single one, or the first tenant by name.
  audit_user     = local.tenants ? local.first_tenant : redlock_credentials.this.lock_user
  audit_password = local.tenants ? ephemeral.redlock_credentials.tenant[local.first_tenant].lock_password : ephemeral.redlock_credentials.this.lock_password
  # redlock_users (shared_users.tf) logs in with the admin password write-only.
  live_admin_password    = null
  live_admin_password_wo = ephemeral.redlock_credentials.this.admin_password
  # With tls, the CA's key is kept beside the passwords, and each server key in tls/: the
  # hosts' provisioning delivers it (tls_server_key_files), never the user-data or the state.
  ca_key_file    = "${local.secrets_dir}/ca.key"
  server_key_dir = "${local.secrets_dir}/tls"
}
