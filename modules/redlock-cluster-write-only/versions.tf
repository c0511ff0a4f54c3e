terraform {
  # Ephemeral resources and outputs (1.10) and write-only arguments (1.11). On older
  # versions, use modules/redlock-cluster: the same masters, its passwords kept in the state.
  required_version = ">= 1.11.0"

  required_providers {
    redlock = {
      source  = "redlock-kit/redlock"
      version = ">= 0.1.0"
    }
  }
}
