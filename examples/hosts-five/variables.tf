variable "hosts" {
  description = "Five hosts: name, private IPv4 address, failure_domain (zone or rack; the plan warns without one), and optionally server (redis-server or valkey-server) and tls_ca (the CA in tls_cas that signs the host's certificate, while there are two). The type is the module's, attribute for attribute: Terraform drops an attribute the type lacks without a word."
  type = list(object({
    name           = string
    address        = string
    failure_domain = optional(string)
    server         = optional(string)
    tls_ca         = optional(string)
  }))
}

variable "allow_shared_failure_domain" {
  description = "Allow two masters in one failure domain (tests and labs only)."
  type        = bool
  default     = false
}

variable "server" {
  description = "Debian package that runs the masters: redis-server or valkey-server."
  type        = string
  default     = "redis-server"
}

variable "max_lock_ttl" {
  description = "Largest lock TTL clients may use."
  type        = string
  default     = "30s"
}

variable "install_packages" {
  description = "Have cloud-init install the server package; false for images that have it."
  type        = bool
  default     = true
}

variable "hooks" {
  description = "Commands systemd runs on each host on restart-policy events (on_crash, before_restart, after_restart); argv lists."
  type = object({
    on_crash       = optional(list(string))
    before_restart = optional(list(string))
    after_restart  = optional(list(string))
  })
  default = {}
}

variable "tls" {
  description = "Serve TLS only, with a CA and per-host certificates made by the module; lock clients get the CA in client_config."
  type        = bool
  default     = false
}

variable "tls_cas" {
  description = "With tls, the names of the CAs: one, or two while the hosts move to a new CA (the day-2 guide's \"Rotate certificates\")."
  type        = list(string)
  default     = ["1"]
}

variable "lock_users" {
  description = "Lock users, one per application, each confined to its key prefix, e.g. { billing = { key_prefix = \"billing:\" } }; allow_eval = true also lets that user run EVAL inside its prefix, for other Redlock clients (redsync, node-redlock). Each gets a client config (output client_configs). Empty (the default): one lock user with every key."
  type = map(object({
    key_prefix = string
    allow_eval = optional(bool, false)
  }))
  default = {}
}

variable "exporters" {
  description = "Run Debian's redis and node exporters on every host (see docs/monitoring.md)."
  type        = bool
  default     = true
}
