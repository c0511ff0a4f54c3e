package redistest_test

import (
	"context"
	"encoding/binary"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

func TestHarnessMastersAreSafeAndFaultable(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{Masters: 3})
	ctx := context.Background()
	m := c.Masters[0]

	t.Run("safe config", func(t *testing.T) {
		for param, want := range map[string]string{"appendfsync": "always", "appendonly": "yes",
			"maxmemory-policy": "noeviction", "no-appendfsync-on-rewrite": "no"} {
			got, err := m.Admin().ConfigGet(ctx, param).Result()
			if err != nil || got[param] != want {
				t.Errorf("%s = %q (err %v), want %q", param, got[param], err, want)
			}
		}
	})
	t.Run("lock user is restricted", func(t *testing.T) {
		lc := m.LockClient()
		defer lc.Close()
		if err := lc.SetNX(ctx, "k", "v", time.Minute).Err(); err != nil {
			t.Fatalf("lock user SET NX: %v", err)
		}
		if err := lc.ConfigGet(ctx, "requirepass").Err(); err == nil {
			t.Fatal("lock user could run CONFIG GET")
		}
		if err := lc.FlushAll(ctx).Err(); err == nil {
			t.Fatal("lock user could run FLUSHALL")
		}
	})
	t.Run("kill then restart keeps acknowledged keys", func(t *testing.T) {
		if err := m.Admin().Set(ctx, "durable", "1", time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
		if err := m.Kill(); err != nil {
			t.Fatal(err)
		}
		if m.Running() {
			t.Fatal("still running after SIGKILL")
		}
		if err := m.Restart(); err != nil {
			t.Fatal(err)
		}
		if v, err := m.Admin().Get(ctx, "durable").Result(); err != nil || v != "1" {
			t.Fatalf("after restart: %q, %v", v, err)
		}
	})
	t.Run("paused master times out", func(t *testing.T) {
		p := c.Masters[1]
		if err := p.Pause(); err != nil {
			t.Fatal(err)
		}
		lc := p.LockClient()
		defer lc.Close()
		tctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
		defer cancel()
		if err := lc.Ping(tctx).Err(); err == nil {
			t.Fatal("paused master answered")
		}
		if err := p.Resume(); err != nil {
			t.Fatal(err)
		}
		if err := p.Admin().Ping(ctx).Err(); err != nil {
			t.Fatalf("resumed master: %v", err)
		}
	})
	t.Run("clean shutdown", func(t *testing.T) {
		p := c.Masters[2]
		if err := p.Shutdown(); err != nil {
			t.Fatal(err)
		}
		if p.Running() {
			t.Fatal("running after SHUTDOWN")
		}
	})
}

func TestClockSkewedMasterKeepsWrongTime(t *testing.T) {
	t.Parallel()
	redistest.RequireClockSkew(t)
	c := redistest.Start(t, redistest.Options{Masters: 1, Clock: &redistest.ClockSkew{Offset: time.Hour, Rate: 4}})
	ctx := context.Background()
	m := c.Masters[0]
	first, err := m.Admin().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if ahead := time.Until(first); ahead < 59*time.Minute {
		t.Fatalf("master clock is %v ahead, want about 1h", ahead)
	}
	// At four times the real rate a TTL runs out in a quarter of the real time: a key set
	// with PX 2000 on this master is gone while a correct clock would still hold it.
	if err := m.Admin().Set(ctx, "k", "v", 2*time.Second).Err(); err != nil {
		t.Fatal(err)
	}
	realStart := time.Now()
	for m.Admin().Exists(ctx, "k").Val() == 1 {
		time.Sleep(5 * time.Millisecond)
	}
	if held := time.Since(realStart); held >= 2*time.Second {
		t.Fatalf("a 2s key lived %v of real time on a master whose clock runs at 4x", held)
	}
}

func TestClockStepFileStepsARunningMaster(t *testing.T) {
	t.Parallel()
	redistest.RequireClockSkew(t)
	step := filepath.Join(t.TempDir(), "step")
	if err := os.WriteFile(step, make([]byte, 8), 0o600); err != nil {
		t.Fatal(err)
	}
	c := redistest.Start(t, redistest.Options{Masters: 1, Clock: &redistest.ClockSkew{StepFile: step}})
	ctx := context.Background()
	m := c.Masters[0]
	before, err := m.Admin().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Admin().Set(ctx, "k", "v", time.Minute).Err(); err != nil {
		t.Fatal(err)
	}
	// Two minutes forward, written in place: the running server's clock jumps and the
	// one-minute key has expired.
	f, err := os.OpenFile(step, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	var b [8]byte
	binary.NativeEndian.PutUint64(b[:], uint64(2*time.Minute))
	if _, err := f.WriteAt(b[:], 0); err != nil {
		t.Fatal(err)
	}
	f.Close()
	after, err := m.Admin().Time(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if jump := after.Sub(before); jump < 2*time.Minute || jump > 3*time.Minute {
		t.Fatalf("TIME moved by %v after a 2m step", jump)
	}
	if n := m.Admin().Exists(ctx, "k").Val(); n != 0 {
		t.Fatal("a one-minute key survived a two-minute clock step")
	}
}

// TestTLSOnlyMaster: a TLS master answers a client that trusts the cluster's CA, and a
// plain-text client's command never reaches it: the server ends the connection during
// what it takes for a TLS handshake.
func TestTLSOnlyMaster(t *testing.T) {
	t.Parallel()
	c := redistest.Start(t, redistest.Options{Masters: 1, TLS: true})
	m := c.Masters[0]
	ctx := context.Background()
	if m.TLSConfig == nil || c.CACertPEM == "" {
		t.Fatal("TLS cluster without a CA or a client TLS config")
	}
	for param, want := range map[string]string{"port": "0", "tls-port": strconv.Itoa(m.Port), "tls-auth-clients": "no"} {
		got, err := m.Admin().ConfigGet(ctx, param).Result()
		if err != nil || got[param] != want {
			t.Errorf("%s = %q (err %v), want %q", param, got[param], err, want)
		}
	}
	lc := m.LockClient()
	defer lc.Close()
	if err := lc.SetNX(ctx, "k", "v", time.Minute).Err(); err != nil {
		t.Fatalf("lock user over TLS: %v", err)
	}
	plain := redis.NewClient(&redis.Options{Addr: m.Addr, Username: redistest.LockUser, Password: redistest.LockPassword,
		MaxRetries: -1, DialTimeout: time.Second, ReadTimeout: 2 * time.Second})
	defer plain.Close()
	err := plain.Ping(ctx).Err()
	t.Logf("plain-text PING: %v", err)
	if !redistest.IsPlainTextRefused(err) {
		t.Fatalf("plain-text PING to a TLS-only master: %v, want the connection closed by the server (EOF or reset)", err)
	}
}
