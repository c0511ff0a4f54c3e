# Generated from modules/.shared/cluster_variables.tf by scripts/module-shared.sh (make module-docs): edit that file,
# not this copy; make check-docs fails when they differ.
# Shared by: redlock-cluster redlock-cluster-write-only
# The inputs of both local cluster modules (masters on the machine Terraform runs on).

variable "masters" {
  description = "Number of independent Redis masters. Redlock needs an odd number, at least 3; 5 tolerates two failures."
  type        = number
  default     = 5

  validation {
    condition     = var.masters >= 3 && var.masters % 2 == 1 && floor(var.masters) == var.masters
    error_message = "masters must be an odd whole number >= 3 (3, 5, 7, ...): a majority of an even count tolerates no more failures than one fewer master, and fewer than 3 tolerates none. Use 5 unless you have a reason."
  }
}

variable "name_prefix" {
  description = "Prefix of every master's name and data directory (`<prefix>-0`, `<prefix>-1`, ...)."
  type        = string
  default     = "redlock"

  validation {
    condition     = can(regex("^[a-z0-9][a-z0-9-]{0,40}$", var.name_prefix))
    error_message = "name_prefix must be 1-41 characters of lowercase letters, digits and '-', starting with a letter or digit."
  }
}

variable "bind_addresses" {
  description = "Addresses the masters listen on: one address shared by all (each master then needs its own port), or one per master, e.g. 127.0.0.11-15 (distinct loopback addresses need no root)."
  type        = list(string)
  default     = ["127.0.0.1"]

  validation {
    condition     = length(var.bind_addresses) > 0 && alltrue([for a in var.bind_addresses : can(regex("^[0-9]{1,3}(\\.[0-9]{1,3}){3}$", a))])
    error_message = "bind_addresses must list IPv4 addresses, e.g. [\"127.0.0.1\"] or [\"127.0.0.11\", \"127.0.0.12\", ...]."
  }
}

variable "base_port" {
  description = "Port of the first master; master i listens on base_port + i when ports is empty. With one bind address per master, set ports to the same port repeated instead if you prefer."
  type        = number
  default     = 7379

  validation {
    condition     = var.base_port >= 1 && var.base_port <= 65535 && floor(var.base_port) == var.base_port
    error_message = "base_port must be a whole number between 1 and 65535."
  }
}

variable "ports" {
  description = "Explicit port of each master (one per master). Overrides base_port when not empty. 0 picks a free port at create and keeps it."
  type        = list(number)
  default     = []

  validation {
    condition     = alltrue([for p in var.ports : p >= 0 && p <= 65535 && floor(p) == p])
    error_message = "ports must be whole numbers between 1 and 65535 (or 0 to pick a free port)."
  }
}

variable "data_root" {
  description = "Directory under which each master gets its data directory (`<data_root>/<name_prefix>-<i>`). Defaults to .redlock-data beside the root module."
  type        = string
  default     = null
}

variable "restart_delay" {
  description = "How long a crashed master stays down before it restarts. Defaults to max_lock_ttl plus the clock drift margin; may be larger, never smaller."
  type        = string
  default     = null
}

variable "server_binary" {
  description = "Redis server binary: redis-server, or valkey-server (protocol-compatible). Must be on PATH where terraform runs."
  type        = string
  default     = "redis-server"
}

variable "keep_data_on_destroy" {
  description = "Keep each master's data directory (AOF) when the cluster is destroyed."
  type        = bool
  default     = false
}

variable "hooks" {
  description = "Commands the supervisor runs for every master (argv lists): on_crash, before_restart and after_restart. The master's details are in their environment (REDLOCK_EVENT, REDLOCK_MASTER_NAME, REDLOCK_MASTER_ADDR, ...)."
  type = object({
    on_crash       = optional(list(string))
    before_restart = optional(list(string))
    after_restart  = optional(list(string))
  })
  default = {}
}
