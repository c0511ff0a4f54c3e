# The output that differs between the write-only modules; the rest are in
# shared_write_only_outputs.tf (from modules/.shared/write_only_outputs.tf).

output "monitor_password" {
  description = "Password of monitor_user, for an exporter you run yourself (ephemeral; with exporters = true each host's redis_exporter logs in with a password of its own, made on the host)."
  value       = local.ephemeral_guard ? local.monitor_password : null
  ephemeral   = true
}
