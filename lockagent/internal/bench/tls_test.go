package bench

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestRunTLSBesidePlain: lockagent-tls runs on TLS-only masters beside lockagent on plain
// ones, and the table has the ratio column that is the cost of TLS.
func TestRunTLSBesidePlain(t *testing.T) {
	plain := redistest.Start(t, redistest.Options{Masters: 3})
	secure := redistest.Start(t, redistest.Options{Masters: 3, TLS: true})
	cfg := Config{
		NewClients:      func() []*redis.Client { return plain.LockClients() },
		NewTLSClients:   func() []*redis.Client { return secure.LockClients() },
		Implementations: []string{Lockagent, LockagentTLS},
		Iterations:      20,
		Duration:        300 * time.Millisecond,
		Goroutines:      4,
		Contenders:      3,
		TTL:             5 * time.Second,
		KeyPrefix:       "tls-smoke:",
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	res := rep.Result(LockagentTLS)
	if res == nil || res.Sequential == nil || res.Sequential.Ops != cfg.Iterations || res.Sequential.Errors != 0 ||
		res.Throughput == nil || res.Throughput.Ops == 0 || res.Throughput.Errors != 0 {
		t.Fatalf("lockagent-tls result %+v: want every sequential pair and some throughput, without errors", res)
	}
	// The pairs went to the TLS masters: their keys' fence registers are there.
	keys, err := secure.Masters[0].Admin().Keys(context.Background(), "tls-smoke:lockagent-tls:*").Result()
	if err != nil || len(keys) == 0 {
		t.Fatalf("no lockagent-tls key on the TLS masters (%v): the TLS implementation did not use them", err)
	}
	var out bytes.Buffer
	if err := rep.WriteTable(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "lockagent-tls/lockagent") {
		t.Fatalf("no TLS cost column:\n%s", out.String())
	}
	if _, err := Run(context.Background(), Config{NewClients: cfg.NewClients, Implementations: []string{LockagentTLS}, Iterations: 1}); err == nil ||
		!strings.Contains(err.Error(), "lockagent-tls needs TLS masters") {
		t.Fatalf("lockagent-tls without TLS masters: %v, want an error saying so", err)
	}
}
