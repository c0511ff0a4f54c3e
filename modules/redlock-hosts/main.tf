# Five (or any odd number >= 3) Redlock masters, one per host the user runs: this module
# renders each host's cloud-init user-data (Debian's redis-server or valkey-server under
# systemd, with a fail-closed delayed restart) and audits the endpoints on every plan.
# It creates no instances: pass user_data to your cloud's instance resource.

locals {
  domains = [for h in var.hosts : h.failure_domain if h.failure_domain != null]

  # What the shared files (shared_*.tf, from modules/.shared) read.
  lock_user            = var.lock_user
  credentials_keepers  = var.credentials_keepers
  master_addresses     = [for h in var.hosts : h.address]
  ca_common_name       = "redlock-hosts CA"
  endpoints            = data.redlock_host_config.this[*].endpoint
  quorum               = floor(length(var.hosts) / 2) + 1
  min_restart_delay_ms = min(data.redlock_host_config.this[*].restart_delay_ms...)

  lock_user_hashes = {
    for name, u in var.lock_users : name => {
      key_prefix = u.key_prefix, allow_eval = u.allow_eval, password_sha256 = redlock_credentials.tenant[name].lock_password_sha256
    }
  }
}

data "redlock_host_config" "this" {
  count = length(var.hosts)

  name             = var.hosts[count.index].name
  address          = var.hosts[count.index].address
  port             = var.port
  server           = coalesce(var.hosts[count.index].server, var.server)
  max_lock_ttl     = var.max_lock_ttl
  maxmemory        = var.maxmemory
  install_packages = var.install_packages
  hooks            = var.hooks
  exporters        = var.exporters

  # A host checks passwords against their hashes: its arguments (kept in the state) get
  # the hashes only, but the monitoring password, which the exporter on the host logs in with.
  admin_password_sha256   = redlock_credentials.this.admin_password_sha256
  lock_user               = local.tenants ? null : redlock_credentials.this.lock_user
  lock_password_sha256    = local.tenants ? null : redlock_credentials.this.lock_password_sha256
  lock_users              = local.tenants ? local.lock_user_hashes : null
  monitor_user            = var.monitor_user
  monitor_password        = var.exporters ? redlock_credentials.monitor.lock_password : null
  monitor_password_sha256 = var.exporters ? null : redlock_credentials.monitor.lock_password_sha256

  tls             = var.tls
  tls_cert_pem    = var.tls ? redlock_server_certificate.this[count.index].cert_pem : null
  tls_key_pem     = var.tls ? redlock_server_certificate.this[count.index].private_key_pem : null
  tls_ca_cert_pem = local.ca_cert_pem

  lifecycle {
    precondition {
      condition     = var.allow_shared_failure_domain || length(distinct(local.domains)) == length(local.domains)
      error_message = "Two masters share a failure_domain (${join(", ", local.domains)}): one event there could take a majority. Put each host in its own zone or rack, or set allow_shared_failure_domain = true if you accept that."
    }
    precondition {
      condition     = length(local.domains) == 0 || length(local.domains) == length(var.hosts)
      error_message = "failure_domain is set on ${length(local.domains)} of ${length(var.hosts)} hosts: set it on every host or on none."
    }
  }
}

# Every plan audits the deployment once the hosts answer: drift (a CONFIG SET on a host) or
# an unsafe setting shows as a warning naming the master, the setting and the fix.
check "redlock_deployment" {
  data "redlock_audit" "this" {
    endpoints     = local.endpoints
    username      = "default"
    password      = redlock_credentials.this.admin_password
    lock_username = local.audit_user
    lock_password = local.audit_password
    max_lock_ttl  = var.max_lock_ttl
    restart_delay = "${local.min_restart_delay_ms}ms"
    tls           = var.tls
    ca_cert_pem   = local.ca_cert_pem
  }

  assert {
    condition     = data.redlock_audit.this.safe
    error_message = "The Redlock deployment is not safe: ${join(" ", data.redlock_audit.this.problems)}"
  }
}
