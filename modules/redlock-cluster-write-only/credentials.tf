# The passwords live in files under secrets_dir, never in the state, which gets their
# SHA-256 hashes. The ephemeral redlock_credentials reads them back from their files into the
# masters' write-only arguments, the audit and the client configs: into no plan and no state.
locals {
  secrets_dir = var.secrets_dir != null ? var.secrets_dir : "${abspath(path.root)}/.redlock-secrets"
  # With tls, the CA's key is kept beside the passwords (the server keys are in the state).
  ca_key_file    = "${local.secrets_dir}/ca.key"
  server_key_dir = null # the masters take their keys write-only
}

resource "redlock_credentials" "this" {
  lock_user = local.lock_user
  keepers   = local.credentials_keepers
  file      = "${local.secrets_dir}/admin.json"
}

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
  file    = redlock_credentials.monitor.file
  version = redlock_credentials.monitor.version
}

ephemeral "redlock_credentials" "tenant" {
  for_each = var.lock_users
  file     = redlock_credentials.tenant[each.key].file
  version  = redlock_credentials.tenant[each.key].version
}

locals {
  # The masters' password_wo_version: any new credentials set (a newer version) rotates.
  credentials_version = max(concat([redlock_credentials.this.version, redlock_credentials.monitor.version],
  [for t in redlock_credentials.tenant : t.version])...)
  lock_users = local.tenants ? {
    for name, u in var.lock_users : name => { key_prefix = u.key_prefix, allow_eval = u.allow_eval }
  } : null
  # The lock user the audit logs in as: the single one, or the first tenant by name.
  audit_user     = local.tenants ? local.first_tenant : redlock_credentials.this.lock_user
  audit_password = local.tenants ? ephemeral.redlock_credentials.tenant[local.first_tenant].lock_password : ephemeral.redlock_credentials.this.lock_password
}
