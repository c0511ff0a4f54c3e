package main

import (
	"strings"
	"testing"
)

// TestBenchSpawnTLS: with lockagent-tls, bench also starts TLS-only masters, prints the
// lockagent-tls/lockagent column (the cost of TLS), and stops those masters too.
func TestBenchSpawnTLS(t *testing.T) {
	args := append(append([]string{}, tinyBench...), "--implementations", "lockagent,lockagent-tls")
	code, stdout, stderr := runAgent(t, nil, args...)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	header := strings.SplitN(stdout, "\n", 2)[0]
	for _, col := range []string{"lockagent-tls", "lockagent-tls/lockagent"} {
		if !strings.Contains(header, col) {
			t.Errorf("table header lacks %q:\n%s", col, stdout)
		}
	}
	var tlsLine string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "TLS-only masters") {
			tlsLine = l
		}
	}
	eps := endpointRE.FindAllString(tlsLine, -1)
	if len(eps) != 3 {
		t.Fatalf("bench did not announce its 3 TLS-only masters; stderr:\n%s", stderr)
	}
	assertStopped(t, eps)
	assertStopped(t, spawnedEndpoints(t, stderr))
}
