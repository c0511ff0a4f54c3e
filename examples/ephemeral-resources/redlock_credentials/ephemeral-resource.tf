# Terraform >= 1.11: passwords generated ephemerally and handed to the masters write-only,
# so neither the plan nor the state holds them. New values are generated on every run; the
# masters take them only at create and when password_wo_version changes, so create (or
# rotate) every master that shares them in the same apply.
ephemeral "redlock_credentials" "cluster" {}

resource "redlock_master" "m" {
  count    = 5
  name     = "m${count.index + 1}"
  bind     = "127.0.0.${11 + count.index}"
  port     = 7379
  data_dir = abspath("${path.root}/.redlock/m${count.index + 1}")

  admin_password_wo   = ephemeral.redlock_credentials.cluster.admin_password
  lock_password_wo    = ephemeral.redlock_credentials.cluster.lock_password
  password_wo_version = 1 # raise to rotate both passwords on every master, in place
}
