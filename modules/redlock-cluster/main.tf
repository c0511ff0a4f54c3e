locals {
  data_root = var.data_root != null ? var.data_root : "${abspath(path.root)}/.redlock-data"

  ports = length(var.ports) > 0 ? var.ports : [for i in range(var.masters) : var.base_port + i]
  binds = length(var.bind_addresses) == 1 ? [for i in range(var.masters) : var.bind_addresses[0]] : var.bind_addresses

  # Two masters on the same address and port would be one master counted twice.
  listen = [for i in range(min(length(local.binds), length(local.ports))) : "${local.binds[i]}:${local.ports[i]}"]

  # Two masters must never share a data dir (they would overwrite each other's files). The
  # names make them distinct; the precondition keeps it so. Another configuration (or
  # another instance of this module with the same data_root and name_prefix) is refused by
  # the provider: at plan once its masters run, at apply otherwise.
  data_dirs = [for i in range(var.masters) : "${local.data_root}/${var.name_prefix}-${i}"]

  # What the shared files (shared_*.tf, from modules/.shared) read.
  lock_user            = "redlock"
  credentials_keepers  = null
  master_addresses     = local.binds
  ca_common_name       = "${var.name_prefix} redlock CA"
  ca_key_file          = null
  server_key_dir       = null # the server keys in the state
  endpoints            = redlock_master.this[*].address
  quorum               = floor(var.masters / 2) + 1
  min_restart_delay_ms = min(redlock_master.this[*].restart_delay_ms...)
}

resource "redlock_master" "this" {
  count = var.masters

  name                 = "${var.name_prefix}-${count.index}"
  bind                 = local.binds[count.index]
  port                 = local.ports[count.index]
  data_dir             = local.data_dirs[count.index]
  server_binary        = var.server_binary
  max_lock_ttl         = var.max_lock_ttl
  restart_delay        = var.restart_delay
  maxmemory            = var.maxmemory
  keep_data_on_destroy = var.keep_data_on_destroy

  admin_password = redlock_credentials.this.admin_password
  lock_user      = local.tenants ? null : redlock_credentials.this.lock_user
  lock_password  = local.tenants ? null : redlock_credentials.this.lock_password
  lock_users     = local.lock_users

  monitor_user     = var.monitor_user
  monitor_password = redlock_credentials.monitor.lock_password

  tls             = var.tls
  tls_cert_pem    = var.tls ? redlock_server_certificate.this[count.index].cert_pem : null
  tls_key_pem     = var.tls ? redlock_server_certificate.this[count.index].private_key_pem : null
  tls_ca_cert_pem = local.ca_cert_pem

  hooks = {
    on_crash       = var.hooks.on_crash
    before_restart = var.hooks.before_restart
    after_restart  = var.hooks.after_restart
  }

  lifecycle {
    precondition {
      condition     = length(var.bind_addresses) == 1 || length(var.bind_addresses) == var.masters
      error_message = "bind_addresses has ${length(var.bind_addresses)} entries: give one address shared by all masters, or exactly one per master (${var.masters})."
    }
    precondition {
      condition     = length(var.ports) == 0 || length(var.ports) == var.masters
      error_message = "ports has ${length(var.ports)} entries but masters = ${var.masters}: give one port per master, or leave ports empty and set base_port."
    }
    precondition {
      condition     = length(distinct([for l in local.listen : l if !endswith(l, ":0")])) == length([for l in local.listen : l if !endswith(l, ":0")])
      error_message = "Two masters would listen on the same address and port (${join(", ", local.listen)}): give each master its own port, or its own bind address."
    }
    precondition {
      condition     = length(distinct(local.data_dirs)) == length(local.data_dirs)
      error_message = "Two masters would share a data dir (${join(", ", local.data_dirs)}): every master needs its own."
    }
  }
}

# The deployment is checked as a whole once every master is up: an unsafe cluster fails
# the apply instead of being discovered by the first lock that goes wrong.
data "redlock_audit" "this" {
  endpoints     = local.endpoints
  username      = "default"
  password      = redlock_credentials.this.admin_password
  lock_username = local.audit_user
  lock_password = local.audit_password
  max_lock_ttl  = var.max_lock_ttl
  # The shortest delay is the one that must cover max_lock_ttl plus drift.
  restart_delay = "${local.min_restart_delay_ms}ms"
  tls           = var.tls
  ca_cert_pem   = local.ca_cert_pem

  depends_on = [redlock_master.this]

  lifecycle {
    postcondition {
      condition     = self.safe
      error_message = "The Redlock deployment is not safe: ${join(" ", self.problems)}"
    }
  }
}
