# One CA per deployment: its certificate goes to every master and every lock client; its
# private key only to redlock_server_certificate.
resource "redlock_ca" "locks" {}

output "ca_cert_pem" {
  value = redlock_ca.locks.cert_pem # for lockagent --cacert and the library's RootCAs
}
