# Audits a whole deployment; an unsafe one fails the apply through the postcondition.
data "redlock_audit" "cluster" {
  endpoints     = [for m in redlock_master.m : m.address]
  password      = redlock_credentials.cluster.admin_password
  lock_username = redlock_credentials.cluster.lock_user
  lock_password = redlock_credentials.cluster.lock_password
  max_lock_ttl  = "30s"
  restart_delay = "31s"

  lifecycle {
    postcondition {
      condition     = self.safe
      error_message = "Unsafe Redlock deployment: ${join(" ", self.problems)}"
    }
  }
}
