# Shared by: redlock-cluster redlock-hosts redlock-hosts-write-only redlock-cluster-write-only
# Outputs every module has, and the client configs' non-secret part.

output "quorum" {
  description = "Masters that must agree for a lock: N/2+1."
  value       = local.quorum
}

output "lock_user" {
  description = "The restricted ACL user lock clients authenticate as; null with lock_users (see client_configs)."
  value       = local.tenants ? null : redlock_credentials.this.lock_user
}

output "monitor_user" {
  description = "The ACL user Prometheus exporters log in as (server state only, no key)."
  value       = var.monitor_user
}

locals {
  tenants      = length(var.lock_users) > 0
  first_tenant = local.tenants ? sort(keys(var.lock_users))[0] : null

  base_config = {
    endpoints     = local.endpoints
    tls           = var.tls
    ca_cert_pem   = local.ca_cert_pem
    max_lock_ttl  = var.max_lock_ttl
    restart_delay = "${local.min_restart_delay_ms}ms" # validate checks the shortest
    quorum        = local.quorum
  }
}
