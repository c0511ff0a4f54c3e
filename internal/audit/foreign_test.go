package audit_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestAuditBoundsForeignLocks: an allow_eval user (other Redlock clients) sets what TTL
// its client asks for. Its locks within max_lock_ttl, kit locks handed over with the wait
// queue's slack and fence registers (no TTL by design) pass; a lock above max_lock_ttl and
// a key without a TTL, each set by that user itself, make the audit unsafe, naming the
// key and the user. The user without EVAL (the kit's clients) is sampled too, and has
// nothing over the limit.
func TestAuditBoundsForeignLocks(t *testing.T) {
	t.Parallel()
	users := []redisconf.LockUser{
		{Name: "billing", Password: "billing-secret-0123456789", KeyPrefix: "billing:"},
		{Name: "orders", Password: "orders-secret-0123456789", KeyPrefix: "orders:", AllowEval: true},
	}
	c := startKit(t, redistest.Options{Masters: 3, LockUsers: users})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tgt := target(c)
	tgt.LockUsername, tgt.LockPassword = users[0].Name, users[0].Password
	limit := audit.ForeignLockHoldLimit(tgt.MaxLockTTL, tgt.RestartDelay, audit.DefaultDriftFactor)

	// setAs runs SET as the allow_eval user on every master, as its client would.
	setAs := func(args ...any) {
		t.Helper()
		for _, m := range c.Masters {
			r := m.ClientAs(users[1].Name, users[1].Password)
			err := r.Do(ctx, append([]any{"SET"}, args...)...).Err()
			r.Close()
			if err != nil {
				t.Fatalf("SET %v as %s on %s: %v", args, users[1].Name, m.Addr, err)
			}
		}
	}
	setAs("orders:within", "tok", "PX", tgt.MaxLockTTL.Milliseconds())
	setAs("orders:handed-over", "tok", "PX", limit.Milliseconds()) // the queue's slack, within the hold
	setAs("orders:job"+":fence", "41")                             // a register: no TTL by design
	rep := run(t, tgt)
	for _, m := range rep.Masters {
		if len(m.ForeignLocks) != 0 || m.ForeignKeysSampled != 2 {
			t.Errorf("audit of %s: foreign locks %v out of %d sampled; want none out of 2 (the register skipped)", m.Endpoint, m.ForeignLocks, m.ForeignKeysSampled)
		}
	}
	if !rep.Safe {
		t.Fatalf("locks within max_lock_ttl audited unsafe: %q", rep.Problems)
	}
	requireForeignMetric(t, rep, 0)

	setAs("orders:big", "x", "NX", "PX", time.Hour.Milliseconds())
	setAs("orders:forever", "x")
	rep = run(t, tgt)
	if rep.Safe {
		t.Fatal("an allow_eval user's one-hour lock and a lock without TTL audited safe")
	}
	for _, m := range rep.Masters {
		got := map[string]int64{}
		for _, f := range m.ForeignLocks {
			if f.User != "orders" {
				t.Errorf("%s: foreign lock %v of user %s, want orders", m.Endpoint, f, f.User)
			}
			got[f.Key] = f.PTTLMS
		}
		if len(got) != 2 || got["orders:forever"] != audit.NoTTL || got["orders:big"] <= limit.Milliseconds() {
			t.Errorf("%s: foreign locks %v, want orders:big (about 1h) and orders:forever (no TTL)", m.Endpoint, m.ForeignLocks)
		}
	}
	found := false
	for _, p := range rep.Problems {
		if strings.Contains(p, `"orders:big" (user orders, PTTL`) && strings.Contains(p, `"orders:forever" (user orders, no TTL)`) {
			found = true
		}
	}
	if !found {
		t.Errorf("no problem names the keys and the user: %q", rep.Problems)
	}
	requireForeignMetric(t, rep, 2)
}

// requireForeignMetric checks the metrics file's line for user orders on every master:
// want keys over the limit; billing (no EVAL, nothing long) is sampled with none.
func requireForeignMetric(t *testing.T, rep *audit.Report, want int) {
	t.Helper()
	var b strings.Builder
	if err := rep.WriteForeignLockMetrics(&b); err != nil {
		t.Fatal(err)
	}
	for _, m := range rep.Masters {
		line := fmt.Sprintf("redlock_audit_foreign_locks_unbounded{endpoint=%q,user=\"orders\"} %d\n", m.Endpoint, want)
		if !strings.Contains(b.String(), line) {
			t.Errorf("metrics lack %q:\n%s", line, b.String())
		}
	}
	for _, m := range rep.Masters {
		line := fmt.Sprintf("redlock_audit_foreign_locks_unbounded{endpoint=%q,user=\"billing\"} 0\n", m.Endpoint)
		if !strings.Contains(b.String(), line) {
			t.Errorf("metrics lack %q (a lock user without EVAL is sampled too):\n%s", line, b.String())
		}
	}
}

// TestSampleForeignLocksIsBounded: a user with more keys than the sample's bound costs
// the master the bound's SCAN calls per pattern, not a walk of every key, and the sample
// says it was cut short.
func TestSampleForeignLocksIsBounded(t *testing.T) {
	t.Parallel()
	c := startKit(t, redistest.Options{Masters: 1})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin := c.Masters[0].Admin()
	const calls = 2
	const keys = 3 * audit.ForeignScanCount * calls
	pipe := admin.Pipeline()
	for i := range keys {
		pipe.Set(ctx, fmt.Sprintf("many:%d", i), "x", 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	s, err := audit.SampleForeignLocks(ctx, admin, time.Second, "many", []string{"many:*"}, time.Minute, calls)
	if err != nil {
		t.Fatal(err)
	}
	if s.Sampled == 0 || s.Sampled >= keys || len(s.Over) != s.Sampled || len(s.CutShort) != 1 {
		t.Errorf("sampled %d of %d keys without TTL, %d reported, cut short %q; want a bounded sample, each reported, many:* cut short", s.Sampled, keys, len(s.Over), s.CutShort)
	}
}
