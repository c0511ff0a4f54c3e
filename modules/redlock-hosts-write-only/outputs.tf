# The outputs that differ between the write-only modules; the rest are in
# shared_write_only_outputs.tf (from modules/.shared/write_only_outputs.tf).

output "credentials_files" {
  description = "The files under secrets_dir that hold the passwords, by what they are for: admin, monitor (null with exporters: that password is in the state) and each lock user by name (or the single lock user's)."
  value = {
    admin   = redlock_credentials.this.file
    monitor = redlock_credentials.monitor.file
    users = local.tenants ? { for name in keys(var.lock_users) : name => redlock_credentials.tenant[name].file } : {
      (redlock_credentials.this.lock_user) = redlock_credentials.this.file
    }
  }
}

output "monitor_password" {
  description = "Password of monitor_user, for an exporter you run yourself (ephemeral; with exporters = true each host's redis_exporter already has it, and it is in the state)."
  value       = local.ephemeral_guard ? local.monitor_password : null
  ephemeral   = true
}
