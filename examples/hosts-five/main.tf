# Five Redlock masters on five hosts you run, one master per host. This configuration
# renders each host's cloud-init user-data; give it to your cloud's instance resource (see
# docs/guides/production-hosts.md), boot the hosts, then prove the result:
#   terraform output -raw agent_config > agent.json && lockagent validate -c agent.json

# The module names the provider (redlock-kit/redlock) and the Terraform versions it needs.

module "hosts" {
  source = "../../modules/redlock-hosts"

  hosts                       = var.hosts
  allow_shared_failure_domain = var.allow_shared_failure_domain
  server                      = var.server
  max_lock_ttl                = var.max_lock_ttl
  install_packages            = var.install_packages
  hooks                       = var.hooks
  tls                         = var.tls
  tls_cas                     = var.tls_cas
  lock_users                  = var.lock_users
  exporters                   = var.exporters
}
