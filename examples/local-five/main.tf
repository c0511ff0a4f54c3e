# The kit's main job: five independent, supervised Redis masters on this machine, each on
# its own loopback address, checked as a whole by the redlock_audit data source.
# `make demo` applies it; `make down` destroys it. No input is needed.

# The module names the provider (redlock-kit/redlock) and the Terraform versions it needs.

module "cluster" {
  source = "../../modules/redlock-cluster"

  masters        = 5
  name_prefix    = var.name_prefix
  bind_addresses = var.bind_addresses
  base_port      = var.base_port
  ports          = var.ports
  data_root      = var.data_root
  max_lock_ttl   = var.max_lock_ttl
  server_binary  = var.server_binary
  lock_users     = var.lock_users
  tls            = var.tls

  catalogue_spare = var.catalogue_spare
}
