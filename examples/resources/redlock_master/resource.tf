# One of the independent masters of a Redlock deployment (use five, on distinct loopback
# addresses or ports). Passwords are generated when not given; share them across masters
# with redlock_credentials.
resource "redlock_credentials" "cluster" {}

resource "redlock_master" "m1" {
  name     = "m1"
  bind     = "127.0.0.11"
  port     = 7379
  data_dir = abspath("${path.root}/.redlock/m1")

  # Clients must never use a longer TTL. A crashed master stays down for
  # max_lock_ttl + clock_drift_margin (31s here) before it rejoins.
  max_lock_ttl = "30s"
  maxmemory    = "64mb"

  admin_password = redlock_credentials.cluster.admin_password
  lock_user      = redlock_credentials.cluster.lock_user
  lock_password  = redlock_credentials.cluster.lock_password

  hooks = {
    on_crash      = ["/usr/bin/logger", "-t", "redlock", "master crashed"]
    after_restart = ["/usr/bin/logger", "-t", "redlock", "master back after the restart delay"]
  }

  timeouts = {
    create = "5m"
  }
}

output "m1_address" {
  value = redlock_master.m1.address
}

# Terraform >= 1.11: the same master with its passwords kept out of the plan and the state
# (write-only arguments, here from your own secret store through variables marked
# ephemeral). Rotate with a new password_wo_version.
variable "admin_password" {
  type      = string
  sensitive = true
  ephemeral = true
}

variable "lock_password" {
  type      = string
  sensitive = true
  ephemeral = true
}

resource "redlock_master" "m2" {
  name     = "m2"
  bind     = "127.0.0.12"
  port     = 7379
  data_dir = abspath("${path.root}/.redlock/m2")

  admin_password_wo   = var.admin_password
  lock_password_wo    = var.lock_password
  password_wo_version = 1
}
