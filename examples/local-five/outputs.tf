output "endpoints" {
  description = "host:port of every master."
  value       = module.cluster.endpoints
}

output "quorum" {
  description = "Masters that must agree for a lock."
  value       = module.cluster.quorum
}

output "pids" {
  description = "redis-server pid of every master as of the last refresh: may be stale after a supervised restart; never signal it (crash a master with `terraform-provider-redlock crash <data_dir>`)."
  value       = module.cluster.pids
}

output "supervisor_pids" {
  description = "Supervisor pid of every master."
  value       = module.cluster.supervisor_pids
}

output "data_dirs" {
  description = "Data directory of every master."
  value       = module.cluster.data_dirs
}

output "restart_delay_ms" {
  description = "How long a crashed master stays down."
  value       = module.cluster.restart_delay_ms
}

output "max_lock_ttl_ms" {
  description = "The largest lock TTL clients may use, in milliseconds."
  value       = module.cluster.max_lock_ttl_ms
}

output "lock_user" {
  description = "The restricted ACL user lock clients authenticate as."
  value       = module.cluster.lock_user
}

output "lock_password" {
  description = "Password of the lock user."
  value       = module.cluster.lock_password
  sensitive   = true
}

output "admin_password" {
  description = "Password of the admin user."
  value       = module.cluster.admin_password
  sensitive   = true
}

output "audit" {
  description = "The audit of the deployment at the last apply."
  value       = module.cluster.audit
}

output "agent_config" {
  description = "JSON for `lockagent -c agent.json`. Contains secrets."
  value       = module.cluster.agent_config
  sensitive   = true
}

output "client_config" {
  description = "JSON for application hosts (`lockagent run -c`): lock user only, no admin credentials."
  value       = module.cluster.client_config
  sensitive   = true
}

output "client_configs" {
  description = "One client JSON per lock user (no admin secret), by user name."
  value       = module.cluster.client_configs
  sensitive   = true
}

output "ca_cert_pem" {
  description = "The deployment's CA certificate (tls = true), for `lockagent --cacert`."
  value       = module.cluster.ca_cert_pem
}

output "monitor_user" {
  description = "ACL user for redis_exporter (server state only, no key)."
  value       = module.cluster.monitor_user
}

output "monitor_password" {
  description = "Password of monitor_user."
  value       = module.cluster.monitor_password
  sensitive   = true
}
