package redlockprom_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
	"github.com/redlock-kit/redlock-kit/lockagent/redlockprom"
)

func TestMetricsFollowARealClient(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	reg := prometheus.NewRegistry()
	m, err := redlockprom.New(reg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := redlockprom.New(reg); err == nil {
		t.Fatal("registering the metrics twice in one registry succeeded")
	}
	masters := make([]redis.UniversalClient, 0, 3)
	for _, c := range cluster.LockClients() {
		masters = append(masters, c)
	}
	// The counts below are exact: a reply later than the default node timeout (50 ms at most,
	// which a fresh connection's first command can take on a loaded machine) would move one
	// to another result. The node timeout is not what this test is about.
	client, err := redlock.New(masters, redlock.Options{Hooks: m, NoNotifications: true, NodeTimeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	ctx := context.Background()

	lock, err := client.TryAcquire(ctx, "metrics:a", 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.TryAcquire(ctx, "metrics:a", 5*time.Second); !errors.Is(err, redlock.ErrTaken) {
		t.Fatalf("second TryAcquire: %v, want ErrTaken", err)
	}
	if err := lock.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if err := cluster.Masters[0].Kill(); err != nil {
		t.Fatal(err)
	}
	lock, err = client.TryAcquire(ctx, "metrics:b", 5*time.Second)
	if err != nil {
		t.Fatalf("acquire with one of three masters down: %v", err)
	}
	_ = lock.Release(ctx)
	// A round returns at its majority; the dead master's failure may be reported later, and
	// is reported before Close returns.
	if err := client.Close(); err != nil {
		t.Fatal(err)
	}

	expected := `
# HELP redlock_operations_total Redlock calls (acquire, extend, release), by result.
# TYPE redlock_operations_total counter
redlock_operations_total{op="acquire",result="ok"} 2
redlock_operations_total{op="acquire",result="taken"} 1
redlock_operations_total{op="release",result="ok"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(expected), "redlock_operations_total"); err != nil {
		t.Fatal(err)
	}
	dead := cluster.Masters[0].Addr
	if n := testutil.ToFloat64(counter(t, reg, "redlock_master_replies_total", dead, "acquire", "error")) +
		testutil.ToFloat64(counter(t, reg, "redlock_master_replies_total", dead, "acquire", "timeout")); n < 1 {
		t.Errorf("the killed master %s has no failed acquire reply counted", dead)
	}
	// Per master, what each saw depends on timing (a round returns at its majority, and a
	// SET still queued then is dropped): count over the masters.
	if n := sum(t, reg, "acquire", "vote"); n < 4 {
		t.Errorf("acquire votes over all masters: %v, want >= 4 (two grants, each by a majority of 3)", n)
	}
	if n := sum(t, reg, "acquire", "refused"); n < 2 {
		t.Errorf("acquire refusals over all masters: %v, want >= 2 (the taken attempt met a majority holding it)", n)
	}
	if n, err := testutil.GatherAndCount(reg, "redlock_acquired_validity_seconds", "redlock_acquire_attempts",
		"redlock_operation_duration_seconds", "redlock_master_reply_duration_seconds"); err != nil || n == 0 {
		t.Errorf("histograms: %d series, %v", n, err)
	}
}

// sum adds redlock_master_replies_total over every master for one op and result.
func sum(t *testing.T, reg *prometheus.Registry, op, result string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, f := range families {
		if f.GetName() != "redlock_master_replies_total" {
			continue
		}
		for _, metric := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range metric.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["op"] == op && labels["result"] == result {
				total += metric.GetCounter().GetValue()
			}
		}
	}
	return total
}

// counter finds one series of a counter vector by its label values, in the order of the
// label names sorted (as Gather returns them: master, op, result).
func counter(t *testing.T, reg *prometheus.Registry, name string, values ...string) prometheus.Collector {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, metric := range f.GetMetric() {
			var got []string
			for _, l := range metric.GetLabel() {
				got = append(got, l.GetValue())
			}
			if strings.Join(got, "\x00") == strings.Join(values, "\x00") {
				return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x", Help: "x"},
					func() float64 { return metric.GetCounter().GetValue() })
			}
		}
	}
	return prometheus.NewCounterFunc(prometheus.CounterOpts{Name: "x", Help: "x"}, func() float64 { return 0 })
}

func TestResultNamesEveryKindOfError(t *testing.T) {
	for err, want := range map[error]string{
		nil: "ok", redlock.ErrTaken: "taken", redlock.ErrUnavailable: "unavailable", redlock.ErrDenied: "denied",
		redlock.ErrLost: "lost", redlock.ErrExpired: "expired", context.Canceled: "canceled",
		context.DeadlineExceeded: "canceled", redlock.ErrInvalid: "invalid", redlock.ErrClosed: "closed",
		errors.New("something else"): "error",
	} {
		if got := redlockprom.Result(err); got != want {
			t.Errorf("Result(%v) = %q, want %q", err, got, want)
		}
	}
}
