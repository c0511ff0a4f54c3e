# Generated from modules/.shared/client_configs.tf by scripts/module-shared.sh (make module-docs): edit that file,
# not this copy; make check-docs fails when they differ.
# Shared by: redlock-cluster redlock-hosts
# The client configs with their passwords, from the state (the write-only module's are ephemeral).

output "admin_password" {
  description = "Password of the admin (default) user: for the audit and operators, never for lock clients."
  value       = redlock_credentials.this.admin_password
  sensitive   = true
}

locals {
  # One client config per lock user: the lock user only, never the admin.
  client_configs = local.tenants ? {
    for name, u in var.lock_users : name => merge(local.base_config, {
      username   = name
      password   = redlock_credentials.tenant[name].lock_password
      key_prefix = u.key_prefix
    })
    } : {
    for name in [redlock_credentials.this.lock_user] : name => merge(local.base_config, {
      username   = name
      password   = redlock_credentials.this.lock_password
      key_prefix = ""
    })
  }
  # client_config and agent_config: the single lock user, or the first tenant by name.
  client_config = local.client_configs[local.tenants ? local.first_tenant : redlock_credentials.this.lock_user]
}

output "agent_config" {
  description = "JSON for `lockagent -c agent.json` with the admin credentials `lockagent validate` needs for its audit: for operators. Contains secrets."
  sensitive   = true
  value = jsonencode(merge(local.client_config, {
    admin_username = "default"
    admin_password = redlock_credentials.this.admin_password
  }))
}

output "client_config" {
  description = "The same JSON without the admin credentials: what application hosts need for `lockagent run` and the library. Contains the lock user's password. With lock_users, the first user's by name: use client_configs."
  sensitive   = true
  value       = jsonencode(local.client_config)
}

output "client_configs" {
  description = "One JSON per lock user, by user name (with lock_users, each with its key_prefix; otherwise the single lock user): what each application's hosts need for `lockagent -c` and the library. The lock user only, never the admin. Contains that user's password."
  sensitive   = true
  value       = { for name, c in local.client_configs : name => jsonencode(c) }
}
