# The spare server of catalogue_spare (shared_catalogue_spare.tf): a master like the others,
# with their credentials, outside the deployment.
resource "redlock_master" "catalogue_spare" {
  count = var.catalogue_spare ? 1 : 0

  name                 = "${var.name_prefix}-catalogue-spare"
  bind                 = local.binds[0]
  port                 = 0 # a free port, kept
  data_dir             = "${local.data_root}/${var.name_prefix}-catalogue-spare"
  server_binary        = var.server_binary
  max_lock_ttl         = var.max_lock_ttl
  restart_delay        = var.restart_delay
  maxmemory            = var.maxmemory
  keep_data_on_destroy = false

  admin_password = redlock_credentials.this.admin_password
  lock_user      = local.tenants ? null : redlock_credentials.this.lock_user
  lock_password  = local.tenants ? null : redlock_credentials.this.lock_password
  lock_users     = local.lock_users

  monitor_user     = var.monitor_user
  monitor_password = redlock_credentials.monitor.lock_password

  tls             = var.tls # its address is master 0's: master 0's certificate names it
  tls_cert_pem    = var.tls ? redlock_server_certificate.this[0].cert_pem : null
  tls_key_pem     = var.tls ? redlock_server_certificate.this[0].private_key_pem : null
  tls_ca_cert_pem = local.ca_cert_pem
}
