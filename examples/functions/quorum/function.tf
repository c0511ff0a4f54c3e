# Terraform >= 1.8. How many of five masters a Redlock client must lock on: 3.
output "quorum" {
  value = provider::redlock::quorum(5)
}
