package agentconfig

import (
	"crypto/tls"
	"errors"
	"fmt"
	"os"

	"github.com/redlock-kit/redlock-kit/internal/pki"
)

// ClientTLS is the TLS config lock clients and the audit connect with: nil without TLS; the
// deployment's CA only when CACertPEM or CACertFile gives one (the modules' client configs
// carry it); else the system's roots. The server name is the endpoint's host.
func (c *Config) ClientTLS() (*tls.Config, error) {
	if !c.TLS {
		return nil, nil
	}
	switch {
	case c.CACertPEM != "" && c.CACertFile != "":
		return nil, errors.New("ca_cert_pem and ca_cert_file: both set; give the deployment's CA once (--cacert FILE, LOCKAGENT_CACERT or one of the two)")
	case c.CACertPEM != "":
		cfg, err := pki.ClientConfig(c.CACertPEM)
		if err != nil {
			return nil, fmt.Errorf("ca_cert_pem: %v: give the PEM certificate of the deployment's CA (the module's client config has it)", err)
		}
		return cfg, nil
	case c.CACertFile != "":
		raw, err := os.ReadFile(c.CACertFile)
		if err != nil {
			return nil, fmt.Errorf("ca_cert_file: %v: give the file holding the deployment's CA certificate (PEM)", err)
		}
		cfg, err := pki.ClientConfig(string(raw))
		if err != nil {
			return nil, fmt.Errorf("ca_cert_file %s: %v: give the PEM certificate of the deployment's CA", c.CACertFile, err)
		}
		return cfg, nil
	}
	return &tls.Config{MinVersion: tls.VersionTLS12}, nil
}

// checkTLS: a CA without TLS would be silently unused.
func (c *Config) checkTLS() error {
	if !c.TLS && (c.CACertPEM != "" || c.CACertFile != "") {
		return errors.New("tls: a CA certificate is given (ca_cert_pem, ca_cert_file, --cacert or LOCKAGENT_CACERT) but tls is false: set \"tls\": true (or --tls), or drop the CA")
	}
	_, err := c.ClientTLS()
	return err
}
