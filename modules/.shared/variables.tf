# Shared by: redlock-cluster redlock-hosts redlock-hosts-write-only redlock-cluster-write-only
# The inputs every module takes.

variable "max_lock_ttl" {
  description = "The largest lock TTL any client may use (Go duration, e.g. \"30s\" or \"1m30s\"). A master that did not stop cleanly stays down a little longer than this before it rejoins."
  type        = string
  default     = "30s"

  validation {
    condition     = can(regex("^([0-9]+(\\.[0-9]+)?(ms|s|m|h))+$", var.max_lock_ttl)) && !can(regex("^([0.]+(ms|s|m|h))+$", var.max_lock_ttl))
    error_message = "max_lock_ttl must be a positive duration (Go syntax), such as \"30s\", \"1500ms\", \"2m\" or \"1m30s\": a lock without a TTL (or a zero TTL) is never safe."
  }
}

variable "maxmemory" {
  description = "Explicit maxmemory of each master (redis.conf units). Eviction is off: when full, new locks are refused, live ones are never dropped."
  type        = string
  default     = "64mb"
}

variable "lock_users" {
  description = "Lock users, one per application, by ACL user name: each is confined to the keys and pub/sub channels that start with its key_prefix, so one application cannot read, delete, overwrite, expire or script over another's locks (clients that share one user always can). Each gets its own generated password; client_configs has one JSON per user. allow_eval = true also lets that user run EVAL inside its prefix, for other Redlock clients (redsync, node-redlock) that release with Lua of their own: weaker, since its clients can run any script over any key of the prefix. Empty (the default): one lock user, \"redlock\", with every key."
  type = map(object({
    key_prefix = string
    allow_eval = optional(bool, false)
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
