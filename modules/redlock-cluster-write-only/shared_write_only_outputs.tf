# Generated from modules/.shared/write_only_outputs.tf by scripts/module-shared.sh (make module-docs): edit that file,
# not this copy; make check-docs fails when they differ.
# Shared by: redlock-cluster-write-only redlock-hosts-write-only
# The outputs with a password are ephemeral: a root module passes them on to what takes an
# ephemeral value (a secret store's write-only argument, e.g. aws_secretsmanager_secret_version's
# secret_string_wo), and cannot keep them as outputs of its own. client_settings and
# credentials_files are the same without the secrets, for files you write yourself.
#
# Each ephemeral output's value is guarded by a condition on an ephemeral value: when
# Terraform validates the module, the passwords nested in a client config are not yet known
# to be ephemeral, and an ephemeral output must be so as a whole.

output "admin_password" {
  description = "Password of the admin (default) user (ephemeral): for the audit and operators, never for lock clients."
  value       = ephemeral.redlock_credentials.this.admin_password
  ephemeral   = true
}

locals {
  # One client config per lock user, without its password (in state) and with it (ephemeral).
  client_settings = local.tenants ? {
    for name, u in var.lock_users : name => merge(local.base_config, { username = name, key_prefix = u.key_prefix })
  } : { (redlock_credentials.this.lock_user) = merge(local.base_config, { username = redlock_credentials.this.lock_user, key_prefix = "" }) }
  client_passwords = local.tenants ? {
    for name in keys(var.lock_users) : name => ephemeral.redlock_credentials.tenant[name].lock_password
  } : { (redlock_credentials.this.lock_user) = ephemeral.redlock_credentials.this.lock_password }
  client_configs = { for name, c in local.client_settings : name => merge(c, { password = local.client_passwords[name] }) }
  client_config  = local.client_configs[local.tenants ? local.first_tenant : redlock_credentials.this.lock_user]
  # Always true, and ephemeral (see above).
  ephemeral_guard = ephemeral.redlock_credentials.this.admin_password != null
}

output "client_settings" {
  description = "One JSON per lock user, by user name, as in client_configs but without the password: add it from credentials_files (`jq --slurpfile c <file> '.password = $c[0].lock_password'`). Holds no secret."
  value       = { for name, c in local.client_settings : name => jsonencode(c) }
}

output "credentials_files" {
  description = "The files under secrets_dir that hold the passwords, by what they are for: admin, monitor and each lock user by name (or the single lock user's)."
  value = {
    admin   = redlock_credentials.this.file
    monitor = redlock_credentials.monitor.file
    users = local.tenants ? { for name in keys(var.lock_users) : name => redlock_credentials.tenant[name].file } : {
      (redlock_credentials.this.lock_user) = redlock_credentials.this.file
    }
  }
}

output "client_configs" {
  description = "One JSON per lock user, by user name, with its password (ephemeral): what each application's hosts need for `lockagent -c` and the library. The lock user only, never the admin."
  value       = local.ephemeral_guard ? { for name, c in local.client_configs : name => jsonencode(c) } : null
  ephemeral   = true
}

output "client_config" {
  description = "client_configs' single lock user's JSON, or the first tenant's by name (ephemeral)."
  value       = local.ephemeral_guard ? jsonencode(local.client_config) : null
  ephemeral   = true
}

output "agent_config" {
  description = "client_config with the admin credentials `lockagent validate` needs (ephemeral): for operators."
  value = local.ephemeral_guard ? jsonencode(merge(local.client_config, {
    admin_username = "default"
    admin_password = ephemeral.redlock_credentials.this.admin_password
  })) : null
  ephemeral = true
}
