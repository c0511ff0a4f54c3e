package redlock_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestTLSMasters: the library over TLS-only masters, TLS set on the go-redis clients it is
// given (Options.TLSConfig trusting the deployment's CA): acquire, exclusion, fencing and
// release work as over plain text; clients without TLS reach no master.
func TestTLSMasters(t *testing.T) {
	cl := redistest.Start(t, redistest.Options{Masters: 3, TLS: true})
	c := newClient(t, cl, redlock.Options{}) // redistest's lock clients carry Options.TLSConfig
	ctx := context.Background()
	l, err := c.Acquire(ctx, "tls:job", 5*time.Second)
	if err != nil {
		t.Fatalf("acquire over TLS: %v", err)
	}
	if l.Fence() == 0 {
		t.Error("no fencing token over TLS")
	}
	other := newClient(t, cl, redlock.Options{})
	if _, err := other.TryAcquire(ctx, "tls:job", 5*time.Second); !errors.Is(err, redlock.ErrTaken) {
		t.Fatalf("second acquire over TLS: %v, want ErrTaken", err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatalf("release over TLS: %v", err)
	}
	l2, err := other.TryAcquire(ctx, "tls:job", 5*time.Second)
	if err != nil {
		t.Fatalf("acquire after the release over TLS: %v", err)
	}
	if l2.Fence() <= l.Fence() {
		t.Errorf("fence %d after %d: must increase", l2.Fence(), l.Fence())
	}
	_ = l2.Release(ctx)

	var plain []redis.UniversalClient
	for _, m := range cl.Masters {
		tlsClient := m.LockClient()
		o := tlsClient.Options()
		_ = tlsClient.Close()
		o.TLSConfig = nil
		o.MaxRetries = -1 // the copy holds 0 for -1, which go-redis reads as 3 retries
		r := redis.NewClient(o)
		t.Cleanup(func() { _ = r.Close() })
		plain = append(plain, r)
	}
	pc, err := redlock.New(plain, redlock.Options{NodeTimeout: testNodeTimeout})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pc.Close() })
	if _, err := pc.TryAcquire(ctx, "tls:plain", 5*time.Second); !errors.Is(err, redlock.ErrUnavailable) {
		t.Fatalf("acquire without TLS on TLS-only masters: %v, want ErrUnavailable", err)
	}
}
