# Generated from modules/.shared/write_only_credentials.tf by scripts/module-shared.sh (make module-docs): edit that file,
# not this copy; make check-docs fails when they differ.
# Shared by: redlock-cluster-write-only redlock-hosts-write-only
# The passwords live in files under secrets_dir, never in the state, which gets their SHA-256
# hashes (what the hosts' redlock_host_config and redlock_users need). Where a password itself
# is needed (the masters' write-only arguments, the audit, live users' admin login, the client
# configs), the ephemeral redlock_credentials reads it back from its file, into no plan and no
# state. The module sets
# local.server_key_dir: where the servers' TLS keys are kept (null: in the state).
locals {
  secrets_dir = var.secrets_dir != null ? var.secrets_dir : "${abspath(path.root)}/.redlock-secrets"
  # With tls, the CA's key is kept beside the passwords.
  ca_key_file = "${local.secrets_dir}/ca.key"
}

resource "redlock_credentials" "this" {
  lock_user = local.lock_user
  keepers   = local.credentials_keepers
  file      = "${local.secrets_dir}/admin.json"
}

# For exporters you run yourself; with the hosts module's exporters = true, redis_exporter on
# each host logs in with a password the host makes at first boot, which never leaves it.
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
  # The monitoring password (ephemeral), from its file.
  monitor_password = ephemeral.redlock_credentials.monitor.lock_password
  # The lock user the audit logs in as: the single one, or the first tenant by name.
  audit_user     = local.tenants ? local.first_tenant : redlock_credentials.this.lock_user
  audit_password = local.tenants ? ephemeral.redlock_credentials.tenant[local.first_tenant].lock_password : ephemeral.redlock_credentials.this.lock_password
}
