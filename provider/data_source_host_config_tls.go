package provider

import (
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"

	"github.com/redlock-kit/redlock-kit/internal/hostconfig"
	"github.com/redlock-kit/redlock-kit/internal/master"
)

// redlock_host_config's TLS arguments, as redlock_master's (resource_master_tls.go).

// hostConfigTLSAttributes are merged into redlock_host_config's schema.
func hostConfigTLSAttributes() map[string]schema.Attribute {
	dir := hostconfig.ConfDir + "/"
	return map[string]schema.Attribute{
		"tls": schema.BoolAttribute{Optional: true,
			MarkdownDescription: "Serve TLS only (default `false`): the plain-text port is closed and `port` is the TLS " +
				"port. Needs `tls_cert_pem`, `tls_key_pem` (or `tls_key_on_host`) and `tls_ca_cert_pem`; the policy script's `redis-cli` " +
				"calls (the stop step) use TLS with the CA. Clients authenticate with passwords and verify the master " +
				"against the CA."},
		"tls_cert_pem": schema.StringAttribute{Optional: true,
			MarkdownDescription: "PEM server certificate (`redlock_server_certificate`'s `cert_pem`), issued by " +
				"`tls_ca_cert_pem` and valid for `address`. Written to `" + dir + master.TLSCertFileName + "`."},
		"tls_key_pem": schema.StringAttribute{Optional: true, Sensitive: true,
			MarkdownDescription: "PEM private key of `tls_cert_pem`. Written to `" + dir + master.TLSKeyFileName +
				"`, mode 0600, owned by the server's user (`redis` or `valkey`), which must read it."},
		"tls_key_on_host": schema.BoolAttribute{Optional: true,
			MarkdownDescription: "The server key reaches the host without the user-data (default `false`): leave " +
				"`tls_key_pem` out, keep the key out of the state with `redlock_server_certificate`'s `private_key_file`, " +
				"and have your provisioning put it at `" + dir + master.TLSKeyFileName + "` (owned by root, or the " +
				"server's user; the start makes it 0600 and gives it to that user). Until it is there the master stays " +
				"down, its log saying so; a new host's hold (`restart_delay`) counts from its first attempt to start."},
		"tls_ca_cert_pem": schema.StringAttribute{Optional: true,
			MarkdownDescription: "PEM certificate of the CA that issued `tls_cert_pem` (`redlock_ca`'s `cert_pem`). " +
				"Written to `" + dir + master.TLSCACertFileName + "`."},
	}
}

// hostTLS is the master.TLS m describes; nil when tls is off.
func hostTLS(m *hostConfigModel) *master.TLS {
	if !m.TLS.ValueBool() {
		return nil
	}
	return &master.TLS{CertPEM: m.TLSCertPEM.ValueString(), KeyPEM: m.TLSKeyPEM.ValueString(), CACertPEM: m.TLSCACertPEM.ValueString(),
		KeyOnHost: m.TLSKeyOnHost.ValueBool()}
}
