output "monitor_password" {
  description = "Password of monitor_user, for an exporter you run yourself (with exporters = true each host's redis_exporter logs in with a password of its own, made on the host)."
  value       = redlock_credentials.monitor.lock_password
  sensitive   = true
}
