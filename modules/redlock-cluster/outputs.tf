output "lock_password" {
  description = "Password of the lock user; null with lock_users (see client_configs)."
  value       = local.tenants ? null : redlock_credentials.this.lock_password
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

output "monitor_password" {
  description = "Password of monitor_user, for redis_exporter (REDIS_USER/REDIS_PASSWORD)."
  value       = redlock_credentials.monitor.lock_password
  sensitive   = true
}
