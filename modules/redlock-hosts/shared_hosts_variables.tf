# Generated from modules/.shared/hosts_variables.tf by scripts/module-shared.sh (make module-docs): edit that file,
# not this copy; make check-docs fails when they differ.
# Shared by: redlock-hosts redlock-hosts-write-only
# The inputs of both hosts modules.

variable "hosts" {
  description = "The hosts, one master each, in the order clients use them. address is the host's private IPv4 address, which the master binds to (an address, not a DNS name; IPv6 is not supported); failure_domain (zone, rack) makes the module refuse two masters in one domain (set it on every host, or the plan warns that independence is unchecked); server overrides var.server for this host; tls_ca names the CA in tls_cas that signs this host's server certificate (needed while tls_cas has two; with one, that one)."
  type = list(object({
    name           = string
    address        = string
    failure_domain = optional(string)
    server         = optional(string)
    tls_ca         = optional(string)
  }))

  # Each check reads var.hosts alone, so it fails once, here, naming the hosts at fault.
  validation {
    condition     = length(var.hosts) >= 3 && length(var.hosts) % 2 == 1
    error_message = "hosts has ${length(var.hosts)} entries: Redlock needs an odd number of hosts, at least 3 (3, 5, 7): a majority of an even count tolerates no more failures than one host fewer. Use 5 unless you have a reason."
  }
  validation {
    condition     = alltrue([for h in var.hosts : can(regex("^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$", h.address)) && h.address != "0.0.0.0"])
    error_message = "Not an IPv4 address: ${join(", ", [for i, h in var.hosts : "hosts[${i}] (${h.name}) address = \"${h.address}\"" if !can(regex("^((25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])\\.){3}(25[0-5]|2[0-4][0-9]|1[0-9][0-9]|[1-9]?[0-9])$", h.address)) || h.address == "0.0.0.0"])}. Give each host's private IPv4 address (e.g. aws_instance's private_ip): the master binds to it, so a DNS name cannot be used, and the module supports IPv4 only."
  }
  validation {
    condition     = length(distinct([for h in var.hosts : h.address])) == length(var.hosts)
    error_message = "Two hosts share an address: ${join("; ", [for a in distinct([for h in var.hosts : h.address]) : "${a} is the address of ${join(" and ", [for h in var.hosts : h.name if h.address == a])}" if length([for h in var.hosts : h if h.address == a]) > 1])}. One master per host, each host its own address: a duplicated address would count one master twice toward the quorum."
  }
  validation {
    condition     = length(distinct([for h in var.hosts : h.name])) == length(var.hosts)
    error_message = "Two hosts share a name: ${join(", ", [for n in distinct([for h in var.hosts : h.name]) : "${n} (${length([for h in var.hosts : h if h.name == n])} hosts)" if length([for h in var.hosts : h if h.name == n]) > 1])}. Give each host its own name."
  }
  validation {
    condition     = alltrue([for h in var.hosts : h.failure_domain != null]) || alltrue([for h in var.hosts : h.failure_domain == null])
    error_message = "failure_domain is set on ${length([for h in var.hosts : h if h.failure_domain != null])} of ${length(var.hosts)} hosts: set it on every host or on none (not on ${join(", ", [for h in var.hosts : h.name if h.failure_domain == null])})."
  }
}

variable "tls_cas" {
  description = "With tls, the names of the deployment's CAs: one, or two while the hosts move to a new CA (the day-2 guide's \"Rotate certificates\"). Clients, live users and the audit trust every CA listed (the bundle in ca_cert_pem and client_configs); each host's certificate is signed by the one its tls_ca names. To move to a new CA: add its name and roll the clients' configs out, then move the hosts one at a time (tls_ca), then remove the old name. The CA named \"1\" is the one the module made before it named its CAs."
  type        = list(string)
  default     = ["1"]
  nullable    = false

  validation {
    condition     = length(var.tls_cas) >= 1 && length(var.tls_cas) <= 2 && length(distinct(var.tls_cas)) == length(var.tls_cas)
    error_message = "tls_cas is [${join(", ", var.tls_cas)}]: give one CA name, or two distinct ones (the old and the new) while the hosts move to the new CA."
  }
  validation {
    condition     = alltrue([for name in var.tls_cas : can(regex("^[a-z0-9][a-z0-9-]{0,31}$", name))])
    error_message = "tls_cas names go into CA common names and key file names: use lower-case letters, digits and '-', at most 32 characters (e.g. \"2\", \"2027\")."
  }
}

variable "allow_shared_failure_domain" {
  description = "Allow two masters in one failure_domain. One event in that domain can then take a majority: only for tests and small labs."
  type        = bool
  default     = false
}

variable "server" {
  description = "Debian package that runs each master: redis-server (bookworm: 7.0) or valkey-server (bookworm-backports: 8.0)."
  type        = string
  default     = "redis-server"

  validation {
    condition     = contains(["redis-server", "valkey-server"], var.server)
    error_message = "server must be \"redis-server\" or \"valkey-server\" (Debian package names)."
  }
}

variable "port" {
  description = "Port every master listens on."
  type        = number
  default     = 6379
}

variable "install_packages" {
  description = "Have cloud-init install the server package (apt). Set false for images that already have it."
  type        = bool
  default     = true
}

variable "lock_user" {
  description = "The restricted ACL user lock clients authenticate as."
  type        = string
  default     = "redlock"
}

variable "credentials_keepers" {
  description = "Values that, when changed, generate new passwords, the admin's and every lock user's. With live_users they reach the running masters with an overlap (the apply accepts old and new, the next apply retires the old); otherwise re-provision the hosts."
  type        = map(string)
  default     = {}
}

variable "hooks" {
  description = "Commands (argv, no shell) systemd runs on each host: on_crash after an unclean stop, before_restart before a held start, after_restart once a held start is ready. They get REDLOCK_EVENT, REDLOCK_MASTER_NAME, REDLOCK_MASTER_ADDR, REDLOCK_DATA_DIR, REDLOCK_REDIS_PID, REDLOCK_RESTART_DELAY_MS and REDLOCK_RESTART_AT."
  type = object({
    on_crash       = optional(list(string))
    before_restart = optional(list(string))
    after_restart  = optional(list(string))
  })
  default = {}
}

variable "exporters" {
  description = "Install and start Debian's prometheus-redis-exporter (port 9121, logged in as monitor_user, TLS when on) and prometheus-node-exporter (port 9100, with the textfile collector where each host publishes its master's state) on every host. Set false to run your own."
  type        = bool
  default     = true
  nullable    = false
}

variable "live_users" {
  description = "Apply lock_users to the running masters over the admin connection (redlock_users): adding a tenant or rotating its password (credentials_keepers) then reaches the hosts without new user-data, with an overlap (the apply after a rotation accepts old and new passwords; the next apply retires the old). Needs lock_users, and the masters reachable from where Terraform runs: turn it on once the hosts are up (a new host holds restart_delay before it serves)."
  type        = bool
  default     = false
  nullable    = false
}

variable "seed_fences" {
  description = "A master that starts empty (a new or replaced host, a lost data disk) admits lock users only once live_users has seeded its fence registers from a majority of the other masters (max + 1000 each), so replacing hosts one at a time never lets fences go backwards. Needs live_users and lock_users. Default false: a host's users are on at first boot, and replacing a majority of the hosts one by one can make fences go backwards (the day-2 guide's \"Replace a host\")."
  type        = bool
  default     = false
  nullable    = false
}
