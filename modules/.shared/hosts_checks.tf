# Shared by: redlock-hosts redlock-hosts-write-only
# Plan-time warnings about the hosts: safe to apply, but likely not what was meant. A check
# block warns and never stops the plan; the refusals are the variables' validations and the
# endpoints output's preconditions (shared_hosts.tf).

locals {
  # max_lock_ttl in milliseconds (its validation admits only ms, s, m and h units).
  max_lock_ttl_ms = sum(concat([0], [for part in regexall("([0-9]+(?:\\.[0-9]+)?)(ms|s|m|h)", var.max_lock_ttl) :
  tonumber(part[0]) * lookup({ ms = 1, s = 1000, m = 60000, h = 3600000 }, part[1])]))
  # The largest max_lock_ttl planned without a warning: internal/master.LongHoldTTL, which
  # redlock_master warns above in the cluster modules (5m).
  long_hold_ttl_ms = 300000
  max_lock_ttl_human = (local.max_lock_ttl_ms >= 172800000 ? format("%.1f days", local.max_lock_ttl_ms / 86400000) :
    local.max_lock_ttl_ms >= 3600000 ? format("%.1f hours", local.max_lock_ttl_ms / 3600000) :
  format("%.1f minutes", local.max_lock_ttl_ms / 60000))

  loopback_hosts = [for h in var.hosts : "${h.name} (${h.address})" if startswith(h.address, "127.")]
}

check "max_lock_ttl" {
  assert {
    condition     = local.max_lock_ttl_ms <= local.long_hold_ttl_ms
    error_message = "Long max_lock_ttl: a crashed master stays down ${local.max_lock_ttl_human}. max_lock_ttl = \"${var.max_lock_ttl}\": a master that crashes (kill, OOM, reboot, power loss) or a new host stays down a little longer than that (restart_delay_ms) before it serves again, so that every lock it granted has expired on the other masters. While a majority of the masters is down at once (3 of 5, say), no lock can be taken: every lock is refused for that long. Use the largest TTL your clients really hold a lock for (a long job can extend its lock), usually seconds to a few minutes; this warning appears above 5m."
  }
}

check "failure_domains" {
  assert {
    condition     = length(local.domains) > 0
    error_message = "No host has a failure_domain: nothing checks that one event (a zone, rack or power feed that fails) cannot take a majority of the masters. Set failure_domain on every host (its zone or rack); the module then refuses two masters in one domain."
  }
  assert {
    condition     = !var.allow_shared_failure_domain || length(local.shared_domains) == 0
    error_message = "Masters share a failure_domain (allowed by allow_shared_failure_domain): ${join("; ", local.shared_domains)}. One event there can take them all, a majority if they are one: only for tests and small labs."
  }
}

check "host_addresses" {
  assert {
    condition     = length(local.loopback_hosts) == 0
    error_message = "Loopback host address: ${join(", ", local.loopback_hosts)}. A master bound to 127.0.0.0/8 serves its own machine only, and masters on one machine share its disk, kernel, clock and power: one event takes them all. Give each host its private address; loopback is for tests on one machine."
  }
}
