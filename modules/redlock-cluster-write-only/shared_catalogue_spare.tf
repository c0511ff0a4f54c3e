# Generated from modules/.shared/catalogue_spare.tf by scripts/module-shared.sh (make module-docs): edit that file,
# not this copy; make check-docs fails when they differ.
# Shared by: redlock-cluster redlock-cluster-write-only
# A spare server for the unsafe-deployment catalogue's balancer case (each module's
# catalogue_spare.tf declares redlock_master.catalogue_spare with its own credentials wiring).

variable "catalogue_spare" {
  description = "Also start one spare server with the same users, passwords and settings as the masters, outside the deployment (not in endpoints, agent_config or the audit), on the first bind address and a free port: the second server behind the TCP balancer of the unsafe-deployment catalogue's balancer case (validation.CheckCatalogue; pass output catalogue_spare as CatalogueOptions.Spare). For a test deployment of its own only: the catalogue changes users and settings."
  type        = bool
  default     = false
  nullable    = false
}

output "catalogue_spare" {
  description = "host:port of the spare server (catalogue_spare = true), for validation.CatalogueOptions.Spare; null without it."
  value       = var.catalogue_spare ? redlock_master.catalogue_spare[0].address : null
}
