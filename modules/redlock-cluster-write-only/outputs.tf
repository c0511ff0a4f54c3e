# The output that differs between the write-only modules; the rest are in
# shared_write_only_outputs.tf (from modules/.shared/write_only_outputs.tf).

output "monitor_password" {
  description = "Password of monitor_user, for redis_exporter (REDIS_USER/REDIS_PASSWORD) (ephemeral)."
  value       = local.ephemeral_guard ? local.monitor_password : null
  ephemeral   = true
}
