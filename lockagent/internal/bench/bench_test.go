package bench

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestRunSmoke runs every implementation through every scenario with tiny counts on real
// masters: each must produce results without errors, release every lock it took, and
// the table must show them all. No timing is asserted.
func TestRunSmoke(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	cfg := Config{
		NewClients:     func() []*redis.Client { return cluster.LockClients() },
		NewEvalClients: func() []*redis.Client { return cluster.EvalClients() },
		Iterations:     20,
		Duration:       300 * time.Millisecond,
		Goroutines:     4,
		Contenders:     3,
		TTL:            5 * time.Second,
		KeyPrefix:      "smoke:",
	}
	// lockagent-evalsha is EVALSHA by construction: its user may not FCALL.
	for _, m := range cluster.Masters {
		reply, err := m.Admin().Do(context.Background(), "acl", "dryrun", redistest.EvalUser, "fcall", "f", "0").Text()
		if err != nil || reply == "OK" || !strings.Contains(reply, "fcall") {
			t.Fatalf("ACL DRYRUN of FCALL for the EVAL user on %s: %q %v; lockagent-evalsha would not measure EVALSHA", m.Addr, reply, err)
		}
	}
	rep, err := Run(context.Background(), cfg)
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(rep.Results) != len(AllImplementations) {
		t.Fatalf("results for %d implementations, want %d", len(rep.Results), len(AllImplementations))
	}
	for _, name := range AllImplementations {
		t.Run(name, func(t *testing.T) {
			res := rep.Result(name)
			if res == nil {
				t.Fatal("no result")
			}
			s := res.Sequential
			if s == nil || s.Ops != cfg.Iterations || s.Errors != 0 || s.P50 <= 0 || s.P99 < s.P50 || s.AllocsPerOp <= 0 {
				t.Errorf("sequential = %+v, want %d error-free pairs with latencies and allocations", s, cfg.Iterations)
			}
			if tp := res.Throughput; tp == nil || tp.Ops == 0 || tp.Errors != 0 || tp.PerSecond <= 0 {
				t.Errorf("throughput = %+v, want error-free pairs", tp)
			}
			c := res.Contention
			if name == Floor {
				if c != nil {
					t.Errorf("floor has no retry policy, yet contention = %+v", c)
				}
			} else if c == nil || c.Acquisitions == 0 || c.Jain <= 0 || c.MaxPer == 0 || c.Contenders != cfg.Contenders {
				t.Errorf("contention = %+v, want acquisitions by %d contenders", c, cfg.Contenders)
			}
			// Every lock taken was released: none of the run's keys is left on any master.
			keys := []string{fmt.Sprintf("smoke:%s:seq", name), fmt.Sprintf("smoke:%s:contended", name)}
			for g := range cfg.Goroutines {
				keys = append(keys, fmt.Sprintf("smoke:%s:tp:%d", name, g))
			}
			for _, m := range cluster.Masters {
				n, err := m.Admin().Exists(context.Background(), keys...).Result()
				if err != nil || n != 0 {
					t.Errorf("master %s: %d of %v still exist (err %v)", m.Addr, n, keys, err)
				}
			}
		})
	}

	var out bytes.Buffer
	if err := rep.WriteTable(&out); err != nil {
		t.Fatalf("WriteTable: %v", err)
	}
	table := out.String()
	header := strings.SplitN(table, "\n", 2)[0]
	for _, col := range []string{"metric", Lockagent, LockagentEvalsha, LockagentDurable, LockagentNoFence, Redsync, Floor, "lockagent/lockagent-evalsha", "lockagent/redsync", "lockagent-durable/redsync", "lockagent-nofence/redsync", "lockagent/floor"} {
		if !strings.Contains(header, col) {
			t.Errorf("table header %q lacks column %q", header, col)
		}
	}
	for _, m := range rep.metrics() {
		if !strings.Contains(table, m.name) {
			t.Errorf("table lacks row %q:\n%s", m.name, table)
		}
	}
	for _, target := range rep.Targets() {
		if !target.Known || !strings.Contains(table, target.Name) {
			t.Errorf("target %q not measured or not printed:\n%s", target.Name, table)
		}
	}
}

// TestRunRefusesUnusableDeployment: a lock user that cannot log in ends the run at once
// with the master and the reason, instead of every implementation retrying for ever.
func TestRunRefusesUnusableDeployment(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	cfg := Config{
		NewClients: func() []*redis.Client {
			clients := cluster.LockClients()
			for i, c := range clients {
				o := c.Options()
				o.Password = "wrong"
				o.MaxRetries = -1 // the copy holds 0 for -1, which go-redis reads as 3 retries
				_ = c.Close()
				clients[i] = redis.NewClient(o)
			}
			return clients
		},
		Iterations: 5,
		Duration:   100 * time.Millisecond,
	}
	_, err := Run(context.Background(), cfg)
	if err == nil || !strings.Contains(err.Error(), cluster.Masters[0].Addr) || !strings.Contains(err.Error(), "lock user") {
		t.Fatalf("Run with a wrong password: %v, want an error naming the first master and the lock user", err)
	}
}

func TestPercentile(t *testing.T) {
	ms := func(v ...int) []time.Duration {
		d := make([]time.Duration, len(v))
		for i, x := range v {
			d[i] = time.Duration(x) * time.Millisecond
		}
		return d
	}
	tests := []struct {
		name string
		in   []time.Duration
		q    float64
		want time.Duration
	}{
		{"empty is zero", nil, 0.5, 0},
		{"single value", ms(7), 0.99, 7 * time.Millisecond},
		{"median of unsorted odd count", ms(5, 1, 3), 0.5, 3 * time.Millisecond},
		{"p99 of 100 is the 99th", ms(seq(100)...), 0.99, 99 * time.Millisecond},
		{"p99 of 10 is the largest", ms(seq(10)...), 0.99, 10 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := percentile(tt.in, tt.q); got != tt.want {
				t.Errorf("percentile(%v, %v) = %v, want %v", tt.in, tt.q, got, tt.want)
			}
		})
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

func TestFairness(t *testing.T) {
	tests := []struct {
		name     string
		counts   []int
		jain     float64
		min, max int
	}{
		{"even", []int{5, 5, 5, 5}, 1, 5, 5},
		{"one takes all", []int{8, 0, 0, 0}, 0.25, 0, 8},
		{"two of four", []int{3, 3, 0, 0}, 0.5, 0, 3},
		{"nobody", []int{0, 0}, 0, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			jain, lo, hi := fairness(tt.counts)
			if jain != tt.jain || lo != tt.min || hi != tt.max {
				t.Errorf("fairness(%v) = %v, %d, %d; want %v, %d, %d", tt.counts, jain, lo, hi, tt.jain, tt.min, tt.max)
			}
		})
	}
}

func TestTargets(t *testing.T) {
	rep := &Report{Config: Config{Goroutines: 64}, Results: []*Result{
		{Name: Lockagent, Sequential: &Sequential{P50: 4 * time.Millisecond},
			Throughput: &Throughput{PerSecond: 3000}, Contention: &Contention{P99Wait: 60 * time.Millisecond}},
		{Name: Redsync, Sequential: &Sequential{P50: 4 * time.Millisecond},
			Throughput: &Throughput{PerSecond: 1000}, Contention: &Contention{P99Wait: 100 * time.Millisecond}},
	}}
	want := []struct {
		ratio float64
		met   bool
	}{{3, true}, {1, false}, {0.6, false}}
	ts := rep.Targets()
	if len(ts) != len(want) {
		t.Fatalf("%d targets, want %d", len(ts), len(want))
	}
	for i, tg := range ts {
		t.Run(tg.Name, func(t *testing.T) {
			if !tg.Known || fmt.Sprintf("%.3f", tg.Ratio) != fmt.Sprintf("%.3f", want[i].ratio) || tg.Met() != want[i].met {
				t.Errorf("target = %+v (met %v), want ratio %v met %v", tg, tg.Met(), want[i].ratio, want[i].met)
			}
		})
	}
}
