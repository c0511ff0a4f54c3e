//go:build linux

package chaos

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/hostlab"
)

func TestMain(m *testing.M) {
	if os.Getenv(WorkerEnv) != "" { // this binary was started as a worker by Run
		os.Exit(WorkerMain())
	}
	os.Exit(m.Run())
}

// chaosTTL is the deployment's max_lock_ttl and the workers' lock TTL: restart_delay is
// then 3s, so a run goes through many crashes.
const chaosTTL = 2 * time.Second

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, s)
	}
	return v
}

// TestChaos deploys five masters on five systemd hosts and runs the workers (separate
// processes in three client namespaces) under the nemesis: first within the deployment's
// assumptions, where every checker must pass, then the labelled violation run, where the
// nemesis breaks them and the checkers must find the damage.
//
// CHAOS_DURATION lengthens the safe run (default: one round of every fault kind);
// CHAOS_SEED replays a run's nemesis schedule; CHAOS_WORKERS, CHAOS_KEYS and
// CHAOS_CLIENT_HOSTS size the workload; CHAOS_REPORT_DIR keeps the reports.
func TestChaos(t *testing.T) {
	var duration time.Duration
	if s := os.Getenv("CHAOS_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < 0 {
			t.Fatalf("CHAOS_DURATION=%q: want a Go duration such as 10m", s)
		}
		duration = d
	}
	seed, err := ParseSeed(os.Getenv("CHAOS_SEED"))
	if err != nil {
		t.Fatal(err)
	}
	// The short run (make test) leaves CPU to the hosts it reboots; make chaos sets 12 and 4.
	workers := envInt(t, "CHAOS_WORKERS", 6)
	keys := envInt(t, "CHAOS_KEYS", 3)
	clients := envInt(t, "CHAOS_CLIENT_HOSTS", 3)
	reportDir := os.Getenv("CHAOS_REPORT_DIR")
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("chaos seed %d (replay with CHAOS_SEED=%d)", seed, seed)
	fmt.Fprintf(os.Stderr, "chaos: seed %d (replay with CHAOS_SEED=%d)\n", seed, seed)

	specs := make([]hostlab.HostSpec, 5)
	for i := range specs {
		specs[i] = hostlab.HostSpec{Name: fmt.Sprintf("m%d", i+1)}
	}
	lab := hostlab.Start(t, hostlab.Options{Hosts: specs, Clients: clients, NoBoot: true})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	booted := time.Now()
	d, err := Deploy(ctx, lab, chaosTTL)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("five masters serving %v after the hosts were provisioned", time.Since(booted).Round(100*time.Millisecond))

	run := func(t *testing.T, cfg Config) *Report {
		cfg.Seed, cfg.Workers, cfg.Clients, cfg.Exe = seed, workers, clients, exe
		cfg.Dir = filepath.Join(t.TempDir(), cfg.Label)
		if reportDir != "" {
			cfg.Dir = filepath.Join(reportDir, cfg.Label)
		}
		cfg.Logf = t.Logf
		rep, err := Run(ctx, d, cfg)
		if err != nil {
			t.Fatalf("chaos run %s (seed %d): %v", cfg.Label, seed, err)
		}
		t.Logf("report: %s\n%s", filepath.Join(cfg.Dir, "report.json"), rep.Summary())
		fmt.Fprint(os.Stderr, rep.Summary())
		return rep
	}

	t.Run("safe", func(t *testing.T) {
		rep := run(t, Config{Label: "safe", Duration: duration, Keys: keys, Faults: SafeFaults})
		for _, kind := range SafeFaults {
			if rep.Faults[kind] == 0 {
				t.Errorf("fault %s was never injected", kind)
			}
		}
		if rep.Acquisitions == 0 || rep.Contended == 0 {
			t.Errorf("acquisitions %d, contended %d: the workload did nothing", rep.Acquisitions, rep.Contended)
		}
		if rep.Register.PausedWrites == 0 {
			t.Errorf("no write from a paused holder was recorded, though %d client pauses were injected", rep.Faults[FaultPauseClient])
		}
		if !rep.Safe || rep.Overlaps != 0 || rep.Register.LostWrites != 0 {
			t.Errorf("safety violated within the deployment's assumptions (seed %d): overlaps %d, lost writes %d, %v",
				seed, rep.Overlaps, rep.Register.LostWrites, rep.ViolationCounts)
		}
		if !rep.Live {
			t.Errorf("liveness violated (seed %d): %d windows", seed, rep.LivenessViolations)
		}
	})

	t.Run("violation", func(t *testing.T) {
		// Holders keep the lock for three quarters of its TTL, so a majority that forgets it (data
		// loss with no restart delay, or a clock step) hands it to a second holder.
		rep := run(t, Config{Label: "violation", Duration: 10 * time.Second, Keys: keys, Work: chaosTTL * 3 / 4,
			Faults: ViolationFaults, BreakAssumptions: true})
		if rep.Safe || rep.Overlaps == 0 {
			t.Fatalf("the checkers found no overlap although a majority lost its locks (seed %d): %+v", seed, rep.ViolationCounts)
		}
	})
}
