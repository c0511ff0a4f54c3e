output "user_data" {
  description = "#cloud-config user-data of every host, in the order of var.hosts: give each to its instance resource unchanged. Holds no password: SHA-256 hashes only (and the TLS key with tls)."
  value       = data.redlock_host_config.this[*].user_data
  sensitive   = true
}

output "user_data_base64_gzip" {
  description = "The same user-data gzipped and base64-encoded (aws_instance's user_data_base64, azurerm's custom_data)."
  value       = data.redlock_host_config.this[*].user_data_base64_gzip
  sensitive   = true
}

output "endpoints" {
  description = "address:port of every master, in the order of var.hosts."
  value       = local.endpoints
}

output "restart_delay_ms" {
  description = "How long a master that did not stop cleanly (and a new host) stays down before it grants anything."
  value       = local.min_restart_delay_ms
}

output "units" {
  description = "The systemd unit that runs the master on each host."
  value       = data.redlock_host_config.this[*].unit
}

output "monitor_password" {
  description = "Password of monitor_user, for an exporter you run yourself (with exporters = true each host's redis_exporter already has it)."
  value       = redlock_credentials.monitor.lock_password
  sensitive   = true
}

output "scrape_targets" {
  description = "Prometheus file_sd target groups for the hosts' exporters: redis (redis_exporter, :9121) and node (node_exporter, :9100), each target labelled with its master's name, which the rules in monitoring/ join on. Write each list to a file_sd JSON file (jsonencode) of its own scrape job. Empty lists with exporters = false."
  value = {
    redis = var.exporters ? [for h in var.hosts : { targets = ["${h.address}:9121"], labels = { master = h.name } }] : []
    node  = var.exporters ? [for h in var.hosts : { targets = ["${h.address}:9100"], labels = { master = h.name } }] : []
  }
}
