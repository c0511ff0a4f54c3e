output "user_data" {
  description = "#cloud-config user-data of every host, in the order of var.hosts."
  value       = module.hosts.user_data
  sensitive   = true
}

output "user_data_base64_gzip" {
  description = "The same, gzipped and base64-encoded."
  value       = module.hosts.user_data_base64_gzip
  sensitive   = true
}

output "endpoints" {
  description = "address:port of every master."
  value       = module.hosts.endpoints
}

output "quorum" {
  description = "Masters that must agree for a lock."
  value       = module.hosts.quorum
}

output "restart_delay_ms" {
  description = "How long a master that did not stop cleanly (and a new host) stays down."
  value       = module.hosts.restart_delay_ms
}

output "units" {
  description = "The systemd unit of each master."
  value       = module.hosts.units
}

output "agent_config" {
  description = "JSON for `lockagent validate -c`: operators only (holds the admin password)."
  value       = module.hosts.agent_config
  sensitive   = true
}

output "client_config" {
  description = "JSON for lock clients (`lockagent run -c`, the library): lock user only."
  value       = module.hosts.client_config
  sensitive   = true
}

output "ca_cert_pem" {
  description = "The deployment's CA certificate (tls = true), for `lockagent --cacert`."
  value       = module.hosts.ca_cert_pem
}

output "monitor_user" {
  description = "ACL user the hosts' redis_exporter logs in as (server state only, no key)."
  value       = module.hosts.monitor_user
}

output "monitor_password" {
  description = "Password of monitor_user."
  value       = module.hosts.monitor_password
  sensitive   = true
}

output "scrape_targets" {
  description = "Prometheus file_sd target groups for the hosts' exporters (redis, node), labelled with each master's name: see docs/monitoring.md."
  value       = module.hosts.scrape_targets
}
