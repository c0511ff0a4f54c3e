# Terraform >= 1.8. A Go duration in milliseconds: 90000. Configurations that must also
# run with terraform < 1.8 read redlock_master's computed max_lock_ttl_ms instead.
output "max_lock_ttl_ms" {
  value = provider::redlock::duration_ms("1m30s")
}
