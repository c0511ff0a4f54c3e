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
