resource "redlock_credentials" "cluster" {}

# One master on one host: give user_data to the host's instance resource unchanged.
data "redlock_host_config" "lock_a" {
  name           = "lock-a"
  address        = "10.0.1.10" # the host's private address
  server         = "redis-server"
  max_lock_ttl   = "30s"
  admin_password = redlock_credentials.cluster.admin_password
  lock_user      = redlock_credentials.cluster.lock_user
  lock_password  = redlock_credentials.cluster.lock_password

  hooks = {
    on_crash = ["/usr/bin/logger", "-t", "redlock", "master stopped uncleanly"]
  }
}

output "user_data" {
  value     = data.redlock_host_config.lock_a.user_data
  sensitive = true
}
