# The provider is in shared_providers.tf (from modules/.shared/providers.tf).
terraform {
  # Ephemeral resources and outputs (1.10) and write-only arguments (1.11). On older
  # versions, use modules/redlock-hosts: the same hosts, its passwords kept in the state.
  required_version = ">= 1.11.0"
}
