# Generated from modules/.shared/credentials.tf by scripts/module-shared.sh (make module-docs): edit that file,
# not this copy; make check-docs fails when they differ.
# Shared by: redlock-cluster redlock-hosts
# The passwords, generated and kept in the state (the write-only module keeps them in files).

# One set of credentials for the whole cluster: every lock client authenticates to every
# master with the same restricted user, the audit with the admin password.
resource "redlock_credentials" "this" {
  lock_user = local.lock_user
  keepers   = local.credentials_keepers
}

# The monitoring user's password: its own, so an exporter's config opens nothing else.
resource "redlock_credentials" "monitor" {
  lock_user = var.monitor_user
  keepers   = local.credentials_keepers
}

# With lock_users, one user per application, each with its own password and key prefix.
resource "redlock_credentials" "tenant" {
  for_each  = var.lock_users
  lock_user = each.key
  keepers   = local.credentials_keepers
}

locals {
  lock_users = local.tenants ? {
    for name, u in var.lock_users : name => { key_prefix = u.key_prefix, allow_eval = u.allow_eval, password = redlock_credentials.tenant[name].lock_password }
  } : null
  # The lock user the audit logs in as: the single one, or the first tenant by name.
  audit_user     = local.tenants ? local.first_tenant : redlock_credentials.this.lock_user
  audit_password = local.tenants ? redlock_credentials.tenant[local.first_tenant].lock_password : redlock_credentials.this.lock_password
}
