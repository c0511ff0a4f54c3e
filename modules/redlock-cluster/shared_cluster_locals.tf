# Generated from modules/.shared/cluster_locals.tf by scripts/module-shared.sh (make module-docs): edit that file,
# not this copy; make check-docs fails when they differ.
# Shared by: redlock-cluster redlock-cluster-write-only
# Where the local masters listen and keep their data, and what the other shared files read.

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

  # What redlock_master.this's precondition refuses, each with the fix: one message per
  # placement that is wrong, none when all are right.
  listening = [for l in local.listen : l if !endswith(l, ":0")]
  placement_problems = compact([
    length(var.bind_addresses) == 1 || length(var.bind_addresses) == var.masters ? "" :
    "bind_addresses has ${length(var.bind_addresses)} entries: give one address shared by all masters, or exactly one per master (${var.masters}).",
    length(var.ports) == 0 || length(var.ports) == var.masters ? "" :
    "ports has ${length(var.ports)} entries but masters = ${var.masters}: give one port per master, or leave ports empty and set base_port.",
    length(distinct(local.listening)) == length(local.listening) ? "" :
    "Two masters would listen on the same address and port (${join(", ", local.listen)}): give each master its own port, or its own bind address.",
    length(distinct(local.data_dirs)) == length(local.data_dirs) ? "" :
    "Two masters would share a data dir (${join(", ", local.data_dirs)}): every master needs its own.",
  ])

  # What the other shared files (shared_*.tf, from modules/.shared) read.
  lock_user           = "redlock"
  credentials_keepers = null
  master_addresses    = local.binds
  ca_common_name      = "${var.name_prefix} redlock CA"
  # One CA, which signs every master's certificate (the hosts modules can move to a new one).
  tls_cas                = ["1"]
  master_tls_cas         = [for a in local.master_addresses : "1"]
  master_tls_ca_problems = [for a in local.master_addresses : ""]
  endpoints              = redlock_master.this[*].address
  quorum                 = floor(var.masters / 2) + 1
  min_restart_delay_ms   = min(redlock_master.this[*].restart_delay_ms...)
}
