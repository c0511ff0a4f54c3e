# The outputs that differ between the write-only modules; the rest are in
# shared_write_only_outputs.tf (from modules/.shared/write_only_outputs.tf).

output "credentials_files" {
  description = "The files under secrets_dir that hold the passwords, by what they are for: admin, monitor and each lock user by name (or the single lock user's)."
  value = {
    admin   = redlock_credentials.this.file
    monitor = redlock_credentials.monitor.file
    users = local.tenants ? { for name in keys(var.lock_users) : name => redlock_credentials.tenant[name].file } : {
      (redlock_credentials.this.lock_user) = redlock_credentials.this.file
    }
  }
}

output "monitor_password" {
  description = "Password of monitor_user, for redis_exporter (REDIS_USER/REDIS_PASSWORD) (ephemeral)."
  value       = local.ephemeral_guard ? local.monitor_password : null
  ephemeral   = true
}
