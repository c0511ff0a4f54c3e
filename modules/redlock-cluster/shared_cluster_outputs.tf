# Generated from modules/.shared/cluster_outputs.tf by scripts/module-shared.sh (make module-docs): edit that file,
# not this copy; make check-docs fails when they differ.
# Shared by: redlock-cluster redlock-cluster-write-only
# The local masters' outputs that hold no secret.

output "endpoints" {
  description = "host:port of every master, in order."
  value       = local.endpoints
}

output "pids" {
  description = "redis-server pid of every master as of the last refresh (0 while one is held down). A supervised restart changes it, so it may be stale until the next plan or refresh, and the old pid may belong to another process by then: never signal it. To crash a master for a drill, use `terraform-provider-redlock crash <data_dir>`, which reads the live pid."
  value       = redlock_master.this[*].pid
}

output "supervisor_pids" {
  description = "Supervisor pid of every master, as of the last refresh."
  value       = redlock_master.this[*].supervisor_pid
}

output "data_dirs" {
  description = "Data directory (AOF, config, supervisor log and state) of every master."
  value       = redlock_master.this[*].data_dir
}

output "restart_delay_ms" {
  description = "How long a master that did not stop cleanly stays down before it rejoins, at least: the shortest of the masters' delays, as in the hosts modules and agent_config."
  value       = local.min_restart_delay_ms
}

output "max_lock_ttl_ms" {
  description = "The largest lock TTL clients may use, in milliseconds."
  # Computed by the provider (known at plan), so that the module keeps working with terraform
  # 1.5, which has no provider functions such as provider::redlock::duration_ms.
  value = max(redlock_master.this[*].max_lock_ttl_ms...)
}
