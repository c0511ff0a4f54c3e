# Every output of the module, re-exported under its own name (the module README describes
# each); scripts and tests read them with `terraform output`.

output "user_data" {
  value     = module.hosts.user_data
  sensitive = true
}

output "user_data_base64_gzip" {
  value     = module.hosts.user_data_base64_gzip
  sensitive = true
}

output "endpoints" { value = module.hosts.endpoints }

output "quorum" { value = module.hosts.quorum }

output "restart_delay_ms" { value = module.hosts.restart_delay_ms }

output "units" { value = module.hosts.units }

output "agent_config" {
  value     = module.hosts.agent_config
  sensitive = true
}

output "client_config" {
  value     = module.hosts.client_config
  sensitive = true
}

output "client_configs" {
  value     = module.hosts.client_configs
  sensitive = true
}

output "tls_server_cas" { value = module.hosts.tls_server_cas }

output "ca_cert_pem" { value = module.hosts.ca_cert_pem }

output "monitor_user" { value = module.hosts.monitor_user }

output "monitor_password" {
  value     = module.hosts.monitor_password
  sensitive = true
}

output "scrape_targets" { value = module.hosts.scrape_targets }
