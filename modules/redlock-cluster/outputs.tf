output "endpoints" {
  description = "host:port of every master, in order."
  value       = redlock_master.this[*].address
}

output "quorum" {
  description = "Masters that must agree for a lock: N/2+1."
  value       = floor(var.masters / 2) + 1
}

output "pids" {
  description = "redis-server pid of every master as of the last refresh (0 while one is held down). A supervised restart changes it, so it may be stale until the next plan or refresh, and the old pid may belong to another process by then: never signal it. To crash a master for a drill, use `terraform-provider-redlock crash <data_dir>`, which reads the live pid."
  value       = redlock_master.this[*].pid
}

output "supervisor_pids" {
  description = "Supervisor pid of every master, as of the last refresh."
  value       = redlock_master.this[*].supervisor_pid
}

output "data_dirs" {
  description = "Data directory (AOF, config, supervisor log and state) of every master."
  value       = redlock_master.this[*].data_dir
}

output "restart_delay_ms" {
  description = "How long a crashed master stays down before it rejoins (the largest of the masters')."
  value       = max(redlock_master.this[*].restart_delay_ms...)
}

output "max_lock_ttl_ms" {
  description = "The largest lock TTL clients may use, in milliseconds."
  # Computed by the provider (known at plan), so that the module keeps working with terraform
  # 1.5, which has no provider functions such as provider::redlock::duration_ms.
  value = max(redlock_master.this[*].max_lock_ttl_ms...)
}

output "lock_user" {
  description = "The restricted ACL user lock clients authenticate as; null with lock_users (see client_configs)."
  value       = local.tenants ? null : redlock_credentials.this.lock_user
}

output "lock_password" {
  description = "Password of the lock user; null with lock_users (see client_configs)."
  value       = local.tenants ? null : redlock_credentials.this.lock_password
  sensitive   = true
}

output "admin_password" {
  description = "Password of the admin (default) user: for the audit and operators, never for lock clients."
  value       = redlock_credentials.this.admin_password
  sensitive   = true
}

output "audit" {
  description = "The audit of the deployment at the last apply: safe, quorum and problems."
  value = {
    safe     = data.redlock_audit.this.safe
    quorum   = data.redlock_audit.this.quorum
    problems = data.redlock_audit.this.problems
  }
}

locals {
  base_config = {
    endpoints     = redlock_master.this[*].address
    tls           = var.tls
    ca_cert_pem   = local.ca_cert_pem
    max_lock_ttl  = var.max_lock_ttl
    restart_delay = "${min(redlock_master.this[*].restart_delay_ms...)}ms" # validate checks the shortest
    quorum        = floor(var.masters / 2) + 1
  }
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

output "monitor_user" {
  description = "The ACL user Prometheus exporters log in as (server state only, no key)."
  value       = var.monitor_user
}

output "monitor_password" {
  description = "Password of monitor_user, for redis_exporter (REDIS_USER/REDIS_PASSWORD)."
  value       = redlock_credentials.monitor.lock_password
  sensitive   = true
}
