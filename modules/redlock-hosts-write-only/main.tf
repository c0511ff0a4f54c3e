# modules/redlock-hosts with no password in the state (Terraform >= 1.11): the same hosts
# and user-data (shared_*.tf), the passwords kept in files under secrets_dir
# (shared_write_only_credentials.tf), the audit (shared_write_only_audit.tf) and the client
# configs ephemeral. It creates no instances: pass user_data to your cloud's instance resource.

locals {
  # redlock_users (shared_users.tf) logs in with the admin password write-only.
  live_admin_password    = null
  live_admin_password_wo = ephemeral.redlock_credentials.this.admin_password
  # Each server key in a file under tls/: the hosts' provisioning delivers it
  # (tls_server_key_files), never the user-data or the state.
  server_key_dir = "${local.secrets_dir}/tls"
}
