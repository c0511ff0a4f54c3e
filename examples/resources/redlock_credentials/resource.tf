# Passwords shared by every master of a cluster, generated once and kept in state.
resource "redlock_credentials" "cluster" {
  lock_user = "redlock"

  # Change a keeper to rotate both passwords.
  keepers = {
    rotation = "2026-01"
  }
}
