terraform {
  required_providers {
    redlock = {
      source  = "redlock-kit/redlock"
      version = ">= 0.1.0"
    }
  }
}

# Both settings are optional; these are the defaults.
provider "redlock" {
  server_binary = "redis-server" # or "valkey-server"
  bind          = "127.0.0.1"
}
