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

variable "max_lock_ttl" {
  description = "The largest lock TTL any client may use (Go duration, e.g. \"30s\" or \"1m30s\"). A crashed master stays down longer than this before it rejoins."
  type        = string
  default     = "30s"

  validation {
    condition     = can(regex("^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$", var.max_lock_ttl)) && !can(regex("^([0.]+(ms|s|m|h))+$", var.max_lock_ttl))
    error_message = "max_lock_ttl must be a positive duration (Go syntax), such as \"30s\", \"1500ms\", \"2m\" or \"1m30s\": a lock without a TTL (or a zero TTL) is never safe."
  }
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

variable "maxmemory" {
  description = "Explicit maxmemory of each master (eviction is off: when full, new locks are refused, live ones are never dropped)."
  type        = string
  default     = "64mb"
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

variable "lock_users" {
  description = "Lock users, one per application, by ACL user name: each is confined to the keys and pub/sub channels that start with its key_prefix, so one application cannot read, delete, overwrite, expire or script over another's locks (clients that share one user always can). Each gets its own generated password; client_configs has one JSON per user. Empty (the default): one lock user, \"redlock\", with every key."
  type = map(object({
    key_prefix = string
  }))
  default = {}

  validation {
    condition     = alltrue([for name in keys(var.lock_users) : can(regex("^[A-Za-z0-9_-]{1,64}$", name)) && name != "default"])
    error_message = "lock_users: each name is the ACL user clients log in as: use 1-64 letters, digits, '_' or '-', and not \"default\" (the admin)."
  }
  validation {
    condition     = alltrue([for u in values(var.lock_users) : length(u.key_prefix) > 0 && !can(regex("[][*?\\\\\\s\"']", u.key_prefix))])
    error_message = "lock_users: every key_prefix must be non-empty, without glob characters (* ? [ ] \\), whitespace or quotes: use letters, digits and separators, such as \"billing:\"."
  }
  validation {
    condition     = alltrue(flatten([for a, u in var.lock_users : [for b, v in var.lock_users : a == b || !startswith(v.key_prefix, u.key_prefix)]]))
    error_message = "lock_users: one key_prefix starts with another, so that user could reach the other's locks: give each user a prefix no other starts with (end each with ':')."
  }
}

variable "tls" {
  description = "Serve TLS only: the module makes a CA and one server certificate per master (offline, keys in the state), every master closes its plain-text port, and the client configs carry the CA certificate (never a key). Changing it replaces the masters."
  type        = bool
  default     = false
  nullable    = false
}

variable "monitor_user" {
  description = "ACL user Prometheus exporters (redis_exporter) log in as on every master: server state only (PING, INFO, CLIENT LIST/INFO, SLOWLOG GET/LEN, LATENCY, MEMORY STATS, COMMAND), no key, no channel, no CONFIG. Its password is generated (output monitor_password)."
  type        = string
  default     = "redlock-monitor"
  nullable    = false

  validation {
    condition     = can(regex("^[A-Za-z0-9_-]{1,64}$", var.monitor_user)) && var.monitor_user != "default"
    error_message = "monitor_user is an ACL user name: use 1-64 letters, digits, '_' or '-', and not \"default\" (the admin)."
  }
}
