package main

import (
	"bytes"
	"context"
	"encoding/xml"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"
)

// tinyBench keeps the CLI tests short; the numbers are irrelevant here.
var tinyBench = []string{"bench", "--spawn", "3", "--iterations", "5", "--rounds", "1", "--duration", "100ms",
	"--goroutines", "2", "--contenders", "2", "--processes", "2"}

// A spawned cluster listens on a loopback address of its own (localmasters.ClaimLoopback).
var endpointRE = regexp.MustCompile(`127\.\d+\.\d+\.\d+:\d+`)

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
	svgFile := filepath.Join(t.TempDir(), "bench.svg")
	code, stdout, stderr := runAgent(t, nil, append(append([]string{}, tinyBench...), "--svg", svgFile)...)
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
	svg, err := os.ReadFile(svgFile)
	if err != nil {
		t.Fatalf("--svg wrote no file: %v", err)
	}
	if err := xml.Unmarshal(svg, new(struct{})); err != nil || !strings.Contains(string(svg), `data-label="redsync"`) {
		t.Fatalf("--svg file is not an SVG with a bar for redsync (%v):\n%s", err, svg)
	}
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
		{"one process", []string{"--spawn", "3", "--processes", "4,1"}, "--processes"},
		{"processes not a number", []string{"--spawn", "3", "--processes", "many"}, "--processes"},
		{"rounds above iterations", []string{"--spawn", "3", "--iterations", "3", "--rounds", "4"}, "--rounds"},
		{"positional argument", []string{"--spawn", "3", "extra"}, "extra"},
		{"no deployment", []string{"--password", "p"}, "endpoints"},
		{"unknown placement", []string{"--spawn", "3", "--placement", "mixed"}, `--placement "mixed"`},
		{"split without spawn", []string{"--endpoints", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "--password", "p", "--placement", "split"}, "--placement split: needs --spawn"},
		{"placement without the cross-process scenario", []string{"--spawn", "3", "--processes", "0", "--placement", "split"}, "--placement split: places the cross-process scenario, which this run skips"},
		{"shared without spawn", []string{"--endpoints", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "--password", "p", "--placement", "shared"}, "--placement shared: needs --spawn"},
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

// TestBenchCrossProcess: the cross-process scenario starts its worker processes (this
// binary, re-executed with the hidden bench-worker command), and every row reports
// acquisitions by every process, no overlapping holds, and, for lockagent, fences in
// acquisition order. redsync's workers succeed only on the EVAL user --spawn creates
// (the lock user may not EVAL). Behaviour only: the numbers are not judged.
func TestBenchCrossProcess(t *testing.T) {
	code, stdout, stderr := runAgent(t, nil, "bench", "--spawn", "3", "--implementations", "lockagent,redsync",
		"--iterations", "5", "--rounds", "1", "--goroutines", "2", "--contenders", "2",
		"--processes", "3", "--duration", "500ms")
	if code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	// The cross-process table, then the hand-off table (rows of the same names).
	_, cross, _ := strings.Cut(stdout, "cross-process contention: P worker processes")
	cross, handOff, _ := strings.Cut(cross, "hand-off against the floor")
	rows := map[string][]string{}
	for _, l := range strings.Split(cross, "\n") {
		f := strings.Fields(l)
		if len(f) >= 11 && (f[0] == "lockagent" || f[0] == "redsync") && f[1] == "3" {
			rows[f[0]] = f
		}
	}
	// The hand-off against the floor: the floor (one write after another, and after the
	// hold's pause) and the bare round were measured (on the EVAL user), and the masters'
	// work counted (--spawn's admin user).
	for _, impl := range []string{"lockagent", "redsync"} {
		found := false
		for _, l := range strings.Split(handOff, "\n") {
			if f := strings.Fields(l); len(f) >= 18 && f[0] == impl && f[1] == "3" {
				found = true
				if f[2] == "n/a" || f[7] == "n/a" || f[9] == "n/a" {
					t.Errorf("%s: floor write %s, at the hold's pace %s, under load %s, want all three measured:\n%s", impl, f[2], f[7], f[9], stdout)
				}
				if idle, loaded, ok := strings.Cut(f[11], "/"); !ok || idle == "n/a" || loaded == "n/a" || f[13] == "n/a" {
					t.Errorf("%s: bare round %s (%s rounds under load), gap less the load %s, want them measured:\n%s", impl, f[11], f[12], f[13], stdout)
				}
			}
		}
		if !found {
			t.Errorf("no hand-off row for %s:\n%s", impl, stdout)
		}
		if !strings.Contains(handOff, impl+", 3 processes: master CPU") {
			t.Errorf("no masters' work for %s:\n%s", impl, stdout)
		}
		// Only the library sends hand-off notices, so only it has a timeline, and the
		// bare relay runs beside the library's cells.
		if got, want := strings.Contains(handOff, impl+", 3 processes: timeline of "), impl == "lockagent"; got != want {
			t.Errorf("a timeline line for %s: %v, want %v:\n%s", impl, got, want, stdout)
		}
		_, relay, got := strings.Cut(handOff, impl+", 3 processes: bare relay: ")
		if want := impl == "lockagent"; got != want {
			t.Errorf("a bare relay line for %s: %v, want %v:\n%s", impl, got, want, stdout)
		}
		if relay, _, _ = strings.Cut(relay, "\n"); got && !strings.Contains(relay, " turns in order, gap p50 ") {
			t.Errorf("bare relay: %s, want its turns in order, and its gap:\n%s", relay, stdout)
		}
	}
	for _, impl := range []string{"lockagent", "redsync"} {
		f := rows[impl]
		if f == nil {
			t.Fatalf("no cross-process row for %s:\n%s", impl, stdout)
		}
		// impl processes acq/s p50 p99 max Jain min/max gave-up overlaps fence...
		if minMax := strings.SplitN(f[7], "/", 2); len(minMax) != 2 || minMax[1] == "0" {
			t.Errorf("%s: no worker process got the lock (min/max %s):\n%s", impl, f[7], stdout)
		}
		if f[9] != "0" {
			t.Errorf("%s: %s overlapping holds:\n%s", impl, f[9], stdout)
		}
	}
	if f := rows["lockagent"]; f[10] != "ok" {
		t.Errorf("lockagent fence order %q, want ok:\n%s", f[10], stdout)
	}
	if f := rows["redsync"]; f[10] != "n/a" {
		t.Errorf("redsync fence order %q, want n/a (no fences):\n%s", f[10], stdout)
	}
	for _, want := range []string{"in-process contention", "cross-process: overlapping holds == 0", "cross-process: fence order violations == 0"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}
	assertStopped(t, spawnedEndpoints(t, stderr))
}

// TestBenchWorkerRefusesBadSpec: the hidden worker command fails clearly when it is not
// given a spec on stdin (it is started by lockagent bench, not by hand).
func TestBenchWorkerRefusesBadSpec(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := benchWorkerMain(context.Background(), strings.NewReader("not json\n"), &stdout, &stderr); code != 1 {
		t.Errorf("exit %d, want 1", code)
	}
	if !strings.Contains(stderr.String(), "spec") {
		t.Errorf("stderr does not name the spec:\n%s", stderr.String())
	}
}
