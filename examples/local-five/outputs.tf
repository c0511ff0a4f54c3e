# Every output of the module, re-exported under its own name (the module README describes
# each); scripts and tests read them with `terraform output`.

output "endpoints" { value = module.cluster.endpoints }

output "quorum" { value = module.cluster.quorum }

output "pids" { value = module.cluster.pids }

output "supervisor_pids" { value = module.cluster.supervisor_pids }

output "data_dirs" { value = module.cluster.data_dirs }

output "restart_delay_ms" { value = module.cluster.restart_delay_ms }

output "max_lock_ttl_ms" { value = module.cluster.max_lock_ttl_ms }

output "lock_user" { value = module.cluster.lock_user }

output "lock_password" {
  value     = module.cluster.lock_password
  sensitive = true
}

output "admin_password" {
  value     = module.cluster.admin_password
  sensitive = true
}

output "audit" { value = module.cluster.audit }

output "agent_config" {
  value     = module.cluster.agent_config
  sensitive = true
}

output "client_config" {
  value     = module.cluster.client_config
  sensitive = true
}

output "client_configs" {
  value     = module.cluster.client_configs
  sensitive = true
}

output "ca_cert_pem" { value = module.cluster.ca_cert_pem }

output "monitor_user" { value = module.cluster.monitor_user }

output "monitor_password" {
  value     = module.cluster.monitor_password
  sensitive = true
}

output "catalogue_spare" { value = module.cluster.catalogue_spare }
