package audit_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/pki"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestTLSDeployment: TLS-only masters audited over TLS (trusting the deployment's CA) are
// safe; a master that also opens a plain-text port is reported; a plain-text audit of a
// TLS deployment reaches no master.
func TestTLSDeployment(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 3, TLS: true})
	tlsConf, err := pki.ClientConfig(c.CACertPEM)
	if err != nil {
		t.Fatal(err)
	}
	tgt := target(c)
	tgt.TLS, tgt.TLSConfig = true, tlsConf

	rep := run(t, tgt)
	if !rep.Safe {
		t.Fatalf("TLS-only cluster reported unsafe:\n%s", strings.Join(rep.Problems, "\n"))
	}
	for _, m := range rep.Masters {
		if m.PlainPort != "0" || m.TLSPort == "" || m.TLSPort == "0" {
			t.Errorf("master %s: port %q tls-port %q, want the plain port closed and a TLS port", m.Endpoint, m.PlainPort, m.TLSPort)
		}
	}

	t.Run("plain-text port opened", func(t *testing.T) {
		m := c.Masters[1]
		port, err := redistest.FreePort(m.Host)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := m.Admin().ConfigSet(ctx, "port", strconv.Itoa(port)).Err(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := m.Admin().ConfigSet(ctx, "port", "0").Err(); err != nil {
				t.Errorf("close the plain port again: %v", err)
			}
		})
		rep := run(t, tgt)
		want := "Master " + m.Addr + " also serves plain text on port " + strconv.Itoa(port)
		if rep.Safe || !containsPrefix(rep.Problems, want) {
			t.Fatalf("want a problem starting %q, got safe=%v:\n%s", want, rep.Safe, strings.Join(rep.Problems, "\n"))
		}
	})

	t.Run("audited without TLS", func(t *testing.T) {
		plain := target(c)
		rep := run(t, plain)
		if rep.Safe || rep.Reachable != 0 {
			t.Fatalf("a plain-text audit of TLS-only masters: safe=%v reachable=%d, want none reachable", rep.Safe, rep.Reachable)
		}
		for _, m := range rep.Masters {
			if !strings.Contains(m.Error, "EOF") && !strings.Contains(m.Error, "reset") {
				t.Errorf("master %s: error %q, want the connection closed by the server (EOF or reset)", m.Endpoint, m.Error)
			}
		}
	})
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}
