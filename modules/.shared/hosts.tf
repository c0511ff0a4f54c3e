# Shared by: redlock-hosts redlock-hosts-write-only
# The hosts: each one's rendered files, checked for independent failure domains.

locals {
  domains = [for h in var.hosts : h.failure_domain if h.failure_domain != null]
  # Each failure domain that holds more than one master, with its hosts: "z1 (hosts a, b)".
  shared_domains = [for d in distinct(local.domains) : "${d} (hosts ${join(", ", [for h in var.hosts : h.name if h.failure_domain == d])})"
  if length([for x in local.domains : x if x == d]) > 1]

  # What the other shared files (modules/.shared) read.
  lock_user           = var.lock_user
  credentials_keepers = var.credentials_keepers
  master_addresses    = [for h in var.hosts : h.address]
  ca_common_name      = "redlock-hosts CA"
  tls_cas             = var.tls_cas
  # The CA each host's certificate is signed by: its tls_ca, else the only CA ("" while there
  # are two: redlock_server_certificate.this refuses it with master_tls_ca_problems).
  master_tls_cas = [for h in var.hosts : h.tls_ca != null ? h.tls_ca : (length(var.tls_cas) == 1 ? var.tls_cas[0] : "")]
  master_tls_ca_problems = [for i, h in var.hosts : !var.tls || contains(var.tls_cas, local.master_tls_cas[i]) ? "" : (
    h.tls_ca == null
    ? "hosts[${i}] (${h.name}) names no tls_ca while tls_cas has two CAs (${join(", ", var.tls_cas)}): say which CA signs each host's certificate. Set tls_ca = \"${var.tls_cas[0]}\" (the old CA, what it serves now) on every host that has not moved to the new CA yet."
    : "hosts[${i}] (${h.name}) has tls_ca = \"${h.tls_ca}\", which is not in tls_cas (${join(", ", var.tls_cas)}): clients trust only the CAs in tls_cas, so they would refuse this host's certificate. To drop a CA, first move every host off it (tls_ca); to move a host to a new CA, add it to tls_cas first, in an apply of its own, and roll the clients' configs out."
  )]
  endpoints            = data.redlock_host_config.this[*].endpoint
  quorum               = floor(length(var.hosts) / 2) + 1
  min_restart_delay_ms = min(data.redlock_host_config.this[*].restart_delay_ms...)

  lock_user_hashes = {
    for name, u in var.lock_users : name => {
      key_prefix = u.key_prefix, allow_eval = u.allow_eval, password_sha256 = redlock_credentials.tenant[name].lock_password_sha256
    }
  }
}

data "redlock_host_config" "this" {
  count = length(var.hosts)

  name             = var.hosts[count.index].name
  address          = var.hosts[count.index].address
  port             = var.port
  server           = coalesce(var.hosts[count.index].server, var.server)
  max_lock_ttl     = var.max_lock_ttl
  maxmemory        = var.maxmemory
  install_packages = var.install_packages
  hooks            = var.hooks
  exporters        = var.exporters
  seed_fences      = var.seed_fences

  # A host checks passwords against their hashes: its arguments (kept in the state) get the
  # hashes only (with exporters, the host makes redis_exporter's password itself).
  admin_password_sha256   = redlock_credentials.this.admin_password_sha256
  lock_user               = local.tenants ? null : redlock_credentials.this.lock_user
  lock_password_sha256    = local.tenants ? null : redlock_credentials.this.lock_password_sha256
  lock_users              = local.tenants ? local.lock_user_hashes : null
  monitor_user            = var.monitor_user
  monitor_password_sha256 = redlock_credentials.monitor.lock_password_sha256

  tls             = var.tls
  tls_cert_pem    = var.tls ? redlock_server_certificate.this[count.index].cert_pem : null
  tls_key_pem     = var.tls ? redlock_server_certificate.this[count.index].private_key_pem : null # null with a key file
  tls_key_on_host = var.tls && local.server_key_dir != null
  # On the host the CA file serves only its own tools (the policy script's redis-cli, the
  # exporter), which talk to this host's certificate: the CA that signed it, so adding or
  # dropping a CA in the clients' bundle leaves every host's user-data as it was.
  tls_ca_cert_pem = var.tls ? redlock_server_certificate.this[count.index].ca_cert_pem : null
}

output "user_data" {
  description = "#cloud-config user-data of every host, in the order of var.hosts: about 18 KiB, over EC2's 16 KiB limit (give user_data_base64_gzip there). Holds no password: SHA-256 hashes only (and the TLS key with tls)."
  value       = data.redlock_host_config.this[*].user_data
  sensitive   = true
}

output "user_data_base64_gzip" {
  description = "The same user-data gzipped and base64-encoded, under 16 KiB gzipped (aws_instance's user_data_base64, azurerm's custom_data)."
  value       = data.redlock_host_config.this[*].user_data_base64_gzip
  sensitive   = true
}

output "tls_server_cas" {
  description = "With tls, the name of the CA (in tls_cas) that signs each host's server certificate, in the order of var.hosts: during a move to a new CA, which hosts are not on it yet. Null otherwise."
  value       = var.tls ? local.master_tls_cas : null
}

output "endpoints" {
  description = "address:port of every master, in the order of var.hosts."
  value       = local.endpoints

  # The refusals that read two inputs (before Terraform 1.9 a variable's validation reads
  # only itself), checked once here: a precondition of the per-host data source would
  # repeat its error for every host.
  precondition {
    condition     = var.allow_shared_failure_domain || length(local.shared_domains) == 0
    error_message = "Two masters share a failure_domain: ${join("; ", local.shared_domains)}. One event there could take a majority. Put each host in its own zone or rack, or set allow_shared_failure_domain = true if you accept that."
  }
  precondition {
    condition     = !var.seed_fences || var.live_users
    error_message = "seed_fences = true renders the lock users off until the live users (redlock_users) seed each master's fence registers and turn them on: set live_users = true too, or leave seed_fences false."
  }
}

output "restart_delay_ms" {
  description = "How long a master that did not stop cleanly (and a new host) stays down before it grants anything, at least: the shortest of the hosts' delays, as in the cluster modules and agent_config."
  value       = local.min_restart_delay_ms
}

output "units" {
  description = "The systemd unit that runs the master on each host."
  value       = data.redlock_host_config.this[*].unit
}

output "scrape_targets" {
  description = "Prometheus file_sd target groups for the hosts' exporters: redis (redis_exporter, :9121) and node (node_exporter, :9100), each target labelled with its master's name, which the rules in monitoring/ join on. Write each list to a file_sd JSON file (jsonencode) of its own scrape job. Empty lists with exporters = false."
  value = {
    redis = var.exporters ? [for h in var.hosts : { targets = ["${h.address}:9121"], labels = { master = h.name } }] : []
    node  = var.exporters ? [for h in var.hosts : { targets = ["${h.address}:9100"], labels = { master = h.name } }] : []
  }
}
