# Every variable has a default: `terraform apply` needs no input. Tests override them to
# run several clusters side by side.

variable "name_prefix" {
  description = "Prefix of the masters' names and data directories."
  type        = string
  default     = "local-five"
}

variable "bind_addresses" {
  description = "One loopback address per master: each master gets its own address without root."
  type        = list(string)
  default     = ["127.0.0.11", "127.0.0.12", "127.0.0.13", "127.0.0.14", "127.0.0.15"]
}

variable "base_port" {
  description = "Port of the first master when ports is empty."
  type        = number
  default     = 7379
}

variable "ports" {
  description = "One port per master; the default puts every master on 7379 at its own address."
  type        = list(number)
  default     = [7379, 7379, 7379, 7379, 7379]
}

variable "data_root" {
  description = "Where the masters keep their data (AOF, config, supervisor log)."
  type        = string
  default     = null
}

variable "max_lock_ttl" {
  description = "The largest lock TTL clients may use."
  type        = string
  default     = "30s"
}

variable "server_binary" {
  description = "redis-server or valkey-server."
  type        = string
  default     = "redis-server"
}

variable "lock_users" {
  description = "Lock users, one per application, each confined to its key prefix, e.g. { billing = { key_prefix = \"billing:\" } }; allow_eval = true also lets that user run EVAL inside its prefix, for other Redlock clients (redsync, node-redlock). Empty (the default): one lock user with every key. The type is the module's, attribute for attribute: Terraform drops an attribute the type lacks without a word."
  type = map(object({
    key_prefix = string
    allow_eval = optional(bool, false)
  }))
  default = {}
}

variable "tls" {
  description = "Serve TLS only, with a CA and per-master certificates made by the module (on one machine this rehearses the configuration; it protects nothing)."
  type        = bool
  default     = false
}

variable "catalogue_spare" {
  description = "Also start one spare server outside the deployment, for the unsafe-deployment catalogue's balancer case (output catalogue_spare feeds validation.CatalogueOptions.Spare). For a test deployment of its own only: the catalogue changes users and settings."
  type        = bool
  default     = false
}
