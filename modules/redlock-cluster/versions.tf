# Generated from modules/.shared/versions.tf by scripts/module-shared.sh (make module-docs): edit that file,
# not this copy; make check-docs fails when they differ.
# Shared by: redlock-cluster redlock-hosts
# Terraform >= 1.5 (the write-only module needs 1.11).

terraform {
  required_version = ">= 1.5.0"

  required_providers {
    redlock = {
      source  = "redlock-kit/redlock"
      version = ">= 0.1.0"
    }
  }
}
