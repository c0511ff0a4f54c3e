# Terraform >= 1.11: masters and their audit with passwords in no plan and no state. The
# managed redlock_credentials keeps them in a 0600 file (the state gets their hashes); the
# ephemeral one reads them back for the write-only arguments and the audit.
resource "redlock_credentials" "cluster" {
  file = abspath("${path.root}/.redlock-secrets/cluster.json")
}

ephemeral "redlock_credentials" "cluster" {
  file    = redlock_credentials.cluster.file
  version = redlock_credentials.cluster.version # unknown until the file exists: opened after it
}

resource "redlock_master" "m" {
  count    = 3
  name     = "m${count.index + 1}"
  bind     = "127.0.0.${11 + count.index}"
  port     = 7379
  data_dir = abspath("${path.root}/.redlock/m${count.index + 1}")

  admin_password_wo   = ephemeral.redlock_credentials.cluster.admin_password
  lock_password_wo    = ephemeral.redlock_credentials.cluster.lock_password
  password_wo_version = redlock_credentials.cluster.version # new passwords reach every master
}

ephemeral "redlock_audit" "cluster" {
  endpoints     = redlock_master.m[*].address
  password      = ephemeral.redlock_credentials.cluster.admin_password
  lock_username = "redlock"
  lock_password = ephemeral.redlock_credentials.cluster.lock_password
  max_lock_ttl  = "30s"
}

# The verdict fails the apply here (the audit's warning says why): Terraform refuses
# ephemeral values in error messages.
resource "terraform_data" "audited" {
  lifecycle {
    precondition {
      condition     = ephemeral.redlock_audit.cluster.safe
      error_message = "The Redlock deployment is not safe: see the warning of ephemeral.redlock_audit.cluster."
    }
  }
}
