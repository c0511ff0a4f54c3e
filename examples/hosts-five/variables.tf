variable "hosts" {
  description = "Five hosts: name, private address, and optionally failure_domain (zone) and server (redis-server or valkey-server)."
  type = list(object({
    name           = string
    address        = string
    failure_domain = optional(string)
    server         = optional(string)
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

variable "exporters" {
  description = "Run Debian's redis and node exporters on every host (see docs/monitoring.md)."
  type        = bool
  default     = true
}
