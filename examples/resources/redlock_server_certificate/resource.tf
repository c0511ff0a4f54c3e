resource "redlock_ca" "locks" {}

# One certificate per master, for the address clients reach it at.
resource "redlock_server_certificate" "m0" {
  ca_cert_pem        = redlock_ca.locks.cert_pem
  ca_private_key_pem = redlock_ca.locks.private_key_pem
  ip_addresses       = ["127.0.0.1"]
}

resource "redlock_master" "m0" {
  name     = "m0"
  data_dir = abspath("${path.root}/.data/m0")

  tls             = true
  tls_cert_pem    = redlock_server_certificate.m0.cert_pem
  tls_key_pem     = redlock_server_certificate.m0.private_key_pem
  tls_ca_cert_pem = redlock_ca.locks.cert_pem
}
