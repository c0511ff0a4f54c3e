# The provider is in shared_providers.tf (from modules/.shared/providers.tf).
terraform {
  # Terraform >= 1.5 (the write-only module needs 1.11).
  required_version = ">= 1.5.0"
}
