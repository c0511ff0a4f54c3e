package main

import (
	"bytes"
	"context"
	"net"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tinyBench keeps the CLI tests short; the numbers are irrelevant here.
var tinyBench = []string{"bench", "--spawn", "3", "--iterations", "5", "--rounds", "1", "--duration", "100ms",
	"--goroutines", "2", "--contenders", "2"}

var endpointRE = regexp.MustCompile(`127\.0\.0\.1:\d+`)

// spawnedEndpoints reads the masters bench announced on stderr.
func spawnedEndpoints(t *testing.T, stderr string) []string {
	t.Helper()
	line := ""
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, "implementations") {
			line = l
		}
	}
	eps := endpointRE.FindAllString(line, -1)
	if len(eps) != 3 {
		t.Fatalf("bench did not announce its 3 masters; stderr:\n%s", stderr)
	}
	return eps
}

// assertStopped checks that nothing listens on the spawned masters' ports any more.
func assertStopped(t *testing.T, endpoints []string) {
	t.Helper()
	for _, ep := range endpoints {
		if conn, err := net.DialTimeout("tcp", ep, time.Second); err == nil {
			_ = conn.Close()
			t.Errorf("master %s still accepts connections after bench exited", ep)
		}
	}
}

// TestBenchSpawn: bench starts its masters, prints the table with every implementation,
// and stops the masters at the end.
func TestBenchSpawn(t *testing.T) {
	code, stdout, stderr := runAgent(t, nil, tinyBench...)
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	header := strings.SplitN(stdout, "\n", 2)[0]
	for _, col := range []string{"lockagent", "lockagent-durable", "lockagent-nofence", "redsync", "floor", "lockagent/redsync"} {
		if !strings.Contains(header, col) {
			t.Errorf("table header lacks %q:\n%s", col, stdout)
		}
	}
	if !strings.Contains(stdout, "targets") {
		t.Errorf("no targets section:\n%s", stdout)
	}
	assertStopped(t, spawnedEndpoints(t, stderr))
}

// TestBenchInterrupt: Ctrl-C during the run exits 130 and still stops the masters.
func TestBenchInterrupt(t *testing.T) {
	long := append(append([]string{}, tinyBench...), "--duration", "60s")
	p := startAgent(t, nil, long...)
	waitForOutput(t, p, "implementations")
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 128+int(syscall.SIGINT) {
		t.Errorf("exit %d, want %d; stderr:\n%s", code, 128+int(syscall.SIGINT), p.stderr.String())
	}
	assertStopped(t, spawnedEndpoints(t, p.stderr.String()))
}

func TestBenchUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"even spawn", []string{"--spawn", "4"}, "--spawn 4"},
		{"unknown implementation", []string{"--spawn", "3", "--implementations", "lockagent,zookeeper"}, "zookeeper"},
		{"one contender", []string{"--spawn", "3", "--contenders", "1"}, "--contenders"},
		{"rounds above iterations", []string{"--spawn", "3", "--iterations", "3", "--rounds", "4"}, "--rounds"},
		{"positional argument", []string{"--spawn", "3", "extra"}, "extra"},
		{"no deployment", []string{"--password", "p"}, "endpoints"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("LOCKAGENT_ENDPOINTS", "")
			var stdout, stderr bytes.Buffer
			if code := benchMain(context.Background(), tt.args, &stdout, &stderr); code != exitUsage {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, exitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr does not name %q:\n%s", tt.want, stderr.String())
			}
		})
	}
}
