# Generated from modules/.shared/users.tf by scripts/module-shared.sh (make module-docs): edit that file,
# not this copy; make check-docs fails when they differ.
# Shared by: redlock-hosts redlock-hosts-write-only
# Live users: redlock_users over every endpoint (the admin password in the state, or write-only).

# Live lock users (var.live_users): tenants added, changed, removed and passwords rotated on
# the running masters over the admin connection, saved to each master's ACL file. The
# user-data keeps rendering the same users, so a host that boots later (a new or replaced
# one) starts with them; running hosts need no new user-data (keep your instance resources
# from being replaced on a user_data change: lifecycle { ignore_changes = [user_data] }).
resource "redlock_users" "live" {
  count = var.live_users ? 1 : 0

  endpoints         = data.redlock_host_config.this[*].endpoint
  admin_password    = local.live_admin_password
  admin_password_wo = local.live_admin_password_wo
  tls               = var.tls
  ca_cert_pem       = local.ca_cert_pem
  # Masters get the SHA-256 of each password only.
  users = {
    for name, u in var.lock_users : name => {
      key_prefix      = u.key_prefix
      allow_eval      = u.allow_eval
      password_sha256 = redlock_credentials.tenant[name].lock_password_sha256
    }
  }

  lifecycle {
    precondition {
      condition     = length(var.lock_users) > 0
      error_message = "live_users = true needs lock_users: live changes manage tenants, each confined to its key_prefix (the single lock user without a prefix reaches every key and is only rendered into the user-data)."
    }
  }
}

output "live_users_acl" {
  description = "With live_users: by user name, each user's ACL on every endpoint as the last refresh or apply found it (\"absent\", \"unreachable: ...\" where it is not as defined); empty otherwise."
  value       = var.live_users ? { for name, u in redlock_users.live[0].users : name => u.acl } : {}
}
