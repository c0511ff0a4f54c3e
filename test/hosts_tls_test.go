//go:build linux

package test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestHostsTLS is the runbook's basic path with tls = true: five hosts provisioned from
// their user-data serve TLS only, validate says SAFE over TLS with the CA the client config
// carries, a plain-text client gets nothing, and a clean restart (the stop step's CLI talks
// TLS) starts again at once. The faults of TestHostsRunbook do not depend on the transport
// and are not repeated here.
func TestHostsTLS(t *testing.T) {
	started := time.Now()
	d := deployHostsFive(t, true)
	t.Logf("deployed with TLS after %s", time.Since(started).Round(100*time.Millisecond))

	t.Run("validate says SAFE over TLS and a second plan is empty", func(t *testing.T) {
		out, err := d.lockagent(context.Background(), "validate", "-c", d.agentConfig)
		if err != nil || !strings.Contains(out, "VERDICT: SAFE") {
			t.Fatalf("lockagent validate: %v\n%s", err, out)
		}
		d.planIsEmpty(t)
	})

	t.Run("each host's state file has its certificate's expiry and appendfsync read over TLS", func(t *testing.T) {
		for _, h := range d.lab.Hosts() {
			// The timer or the next start rewrites it; the started step wrote it already.
			out, err := h.Exec(context.Background(), "cat", "/var/lib/prometheus/node-exporter/redlock.prom")
			if err != nil {
				t.Fatalf("%s: no state file: %v %s", h.Name(), err, out)
			}
			var notAfter float64
			line := `redlock_tls_cert_not_after_seconds{master="` + h.Name() + `"} `
			if i := strings.Index(out, line); i < 0 {
				t.Errorf("%s: the state file has no %s:\n%s", h.Name(), line, out)
			} else if _, err := fmt.Sscanf(out[i+len(line):], "%g", &notAfter); err != nil || notAfter < float64(time.Now().Unix()) {
				t.Errorf("%s: certificate expiry %v (%v), want a time in the future", h.Name(), notAfter, err)
			}
			if !strings.Contains(out, `redlock_master_appendfsync_always{master="`+h.Name()+`"} 1`) {
				t.Errorf("%s: the state file does not say appendfsync always (CONFIG GET over TLS):\n%s", h.Name(), out)
			}
		}
	})

	t.Run("a hand-edited server config is UNSAFE until it is put back", func(t *testing.T) {
		// The host compares the file with the rendered one at every tick of its state timer;
		// the test starts the timer's service instead of waiting for a tick. The saved copy
		// is written back through the same inode (owner and mode stay the service user's).
		ctx := context.Background()
		h := d.lab.Hosts()[0]
		sh := func(script string) {
			t.Helper()
			if out, err := h.Exec(ctx, "sh", "-c", script); err != nil {
				t.Fatalf("%s on %s: %v\n%s", script, h.Name(), err, out)
			}
		}
		const conf = "f=$(ls /etc/redlock/*-server.conf)"
		// A tick that starts after the file changed: a start while the timer's own run is
		// under way (it may have read the file before) waits for that run and starts none;
		// the second start then runs the service again (a oneshot is inactive once done).
		const tick = "systemctl start redlock-state.service && systemctl start redlock-state.service"
		sh(conf + ` && cp -p "$f" /root/server.conf.saved && echo 'appendfsync no' >>"$f"`)
		t.Cleanup(func() { sh(conf + ` && cat /root/server.conf.saved >"$f" && ` + tick) })
		sh(tick)
		out, err := d.lockagent(ctx, "validate", "-c", d.agentConfig)
		if err == nil || !strings.Contains(out, "VERDICT: UNSAFE") || !strings.Contains(out, "changed on disk") {
			t.Fatalf("validate with the server config edited on %s: %v, want UNSAFE naming the file\n%s", h.Name(), err, out)
		}
		sh(conf + ` && cat /root/server.conf.saved >"$f" && ` + tick)
		if out, err := d.lockagent(ctx, "validate", "-c", d.agentConfig); err != nil || !strings.Contains(out, "VERDICT: SAFE") {
			t.Fatalf("validate with the file put back: %v\n%s", err, out)
		}
	})

	t.Run("a plain-text client is refused", func(t *testing.T) {
		for i, ep := range d.endpoints {
			c := redis.NewClient(&redis.Options{Addr: ep, Username: d.lockUser, Password: d.lockPass,
				Dialer: d.lab.DialContext(0), DialTimeout: time.Second, ReadTimeout: 2 * time.Second, MaxRetries: -1})
			err := c.Ping(context.Background()).Err()
			_ = c.Close()
			if !redistest.IsPlainTextRefused(err) {
				t.Errorf("plain-text PING to host %d (%s): %v, want the connection closed by the server (EOF or reset)", i+1, ep, err)
			}
		}
	})

	t.Run("clean restart: the stop step rewrites the AOF over TLS and the start is not held", func(t *testing.T) {
		ctx := context.Background()
		h, i := d.lab.Hosts()[0], 0
		if err := d.admin(i).Set(ctx, "ack:tls-restart", "1", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := h.Systemctl(ctx, "restart", d.units[i]); err != nil {
			t.Fatal(err)
		}
		d.waitServing(t, i)
		journal, _ := h.Exec(ctx, "journalctl", "-b", "-u", d.units[i], "--no-pager", "-o", "cat")
		if !strings.Contains(journal, "last stop was clean: starting at once") {
			t.Fatalf("the gate did not start at once after a clean restart:\n%s", journal)
		}
		if strings.Contains(journal, "could not rewrite the AOF before the stop") {
			t.Fatalf("the stop step's CLI could not reach the TLS master:\n%s", journal)
		}
		if !strings.Contains(journal, "Background append only file rewriting started") {
			t.Fatalf("no AOF rewrite before the stop (the stop step's BGREWRITEAOF over TLS):\n%s", journal)
		}
		if v, err := d.admin(i).Get(ctx, "ack:tls-restart").Result(); err != nil || v != "1" {
			t.Fatalf("acknowledged key after the restart: %q, %v", v, err)
		}
		// The marker is no lock: delete it, or the audit reports a key of the lock user's
		// keyspace (every key) with no TTL or one above max_lock_ttl: no hold covers it.
		if err := d.admin(i).Del(ctx, "ack:tls-restart").Err(); err != nil {
			t.Fatal(err)
		}
		out, err := d.lockagent(ctx, "run", "-c", d.agentConfig, "--key", "after-tls-restart", "--ttl", "5s", "--", "true")
		if err != nil {
			t.Fatalf("lockagent run over TLS after the restart: %v\n%s", err, out)
		}
	})
}
