terraform {
  required_version = ">= 1.5.0"

  required_providers {
    redlock = {
      source  = "redlock-kit/redlock"
      version = ">= 0.1.0"
    }
  }
}
