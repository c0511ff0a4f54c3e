# Generated from modules/.shared/providers.tf by scripts/module-shared.sh (make module-docs): edit that file,
# not this copy; make check-docs fails when they differ.
# Shared by: redlock-cluster redlock-hosts redlock-hosts-write-only redlock-cluster-write-only
# The provider every module uses. Each module's versions.tf says which Terraform it needs.

terraform {
  required_providers {
    redlock = {
      source  = "redlock-kit/redlock"
      version = ">= 0.1.0"
    }
  }
}
