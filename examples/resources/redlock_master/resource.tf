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
