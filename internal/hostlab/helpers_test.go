//go:build linux

package hostlab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const testPassword = "hostlab-test-secret"

// userData installs a redis.conf listening on the host's address with a password and
// a systemd drop-in, then enables and starts Debian's redis-server.service.
func userData(addr string) string {
	return `#cloud-config
write_files:
  - path: /etc/redis/redis.conf
    owner: redis:redis
    permissions: '0640'
    content: |
      bind ` + addr + `
      port 6379
      protected-mode yes
      requirepass ` + testPassword + `
      supervised systemd
      daemonize no
      dir /var/lib/redis
      appendonly yes
      appendfsync always
  - path: /etc/systemd/system/redis-server.service.d/10-hostlab.conf
    content: |
      [Service]
      Environment=HOSTLAB_TEST=1
runcmd:
  - [ sh, -c, 'echo run >> /root/runs' ]
  - [ systemctl, daemon-reload ]
  - [ systemctl, enable, --now, redis-server.service ]
`
}

func redisClient(lab *Lab, h *Host) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr:        net.JoinHostPort(h.Address(), "6379"),
		Password:    testPassword,
		Dialer:      lab.DialContext(0),
		DialTimeout: 2 * time.Second,
		MaxRetries:  -1,
	})
}

func ping(ctx context.Context, lab *Lab, h *Host) error {
	c := redisClient(lab, h)
	defer c.Close()
	got, err := c.Ping(ctx).Result()
	if err != nil {
		return err
	}
	if got != "PONG" {
		return fmt.Errorf("PING %s: %q", h.Name(), got)
	}
	return nil
}

// waitPing retries PING until it works (a restarted or rebooted server).
func waitPing(t *testing.T, lab *Lab, h *Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		err := ping(ctx, lab, h)
		if err == nil {
			return
		}
		if ctx.Err() != nil {
			t.Fatalf("%s never answered PING: %v", h.Name(), err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// expectTimeout checks that a TCP connection from client 0 to h times out (dropped
// packets), neither succeeds nor is refused.
func expectTimeout(t *testing.T, lab *Lab, h *Host) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 700*time.Millisecond)
	defer cancel()
	start := time.Now()
	conn, err := lab.DialContext(0)(ctx, "tcp", net.JoinHostPort(h.Address(), "6379"))
	if err == nil {
		conn.Close()
		t.Fatalf("connection to %s succeeded; want a timeout", h.Name())
	}
	var ne net.Error
	if !(errors.Is(err, context.DeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()) {
		t.Fatalf("dial %s: %v after %v; want a timeout", h.Name(), err, time.Since(start))
	}
}

// hostCanReach runs redis-cli on from against to's address.
func hostCanReach(ctx context.Context, from, to *Host) bool {
	out, err := from.Exec(ctx, "timeout", "2", "redis-cli", "-h", to.Address(), "--no-auth-warning", "-a", testPassword, "PING")
	return err == nil && strings.TrimSpace(out) == "PONG"
}

// udpArrives sends datagrams from one host to another for about a second and reports
// whether any arrived.
func udpArrives(t *testing.T, ctx context.Context, from, to *Host) bool {
	t.Helper()
	var wg sync.WaitGroup
	var got string
	wg.Add(1)
	go func() {
		defer wg.Done()
		got, _ = to.Exec(ctx, "python3", "-c", `import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("`+to.Address()+`", 9999))
s.settimeout(2)
try:
    print(s.recv(100).decode())
except OSError:
    print("nothing")`)
	}()
	if _, err := from.Exec(ctx, "python3", "-c", `import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
for _ in range(12):
    s.sendto(b"hello", ("`+to.Address()+`", 9999))
    time.sleep(0.1)`); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	return strings.Contains(got, "hello")
}

func assertGone(t *testing.T, names, cgroups []string, dir string, pids []int) {
	t.Helper()
	if len(names) == 0 || len(cgroups) == 0 {
		t.Fatal("lab reported no namespaces or cgroups")
	}
	for _, n := range names {
		if _, err := os.Stat(filepath.Join("/run/netns", n)); err == nil {
			t.Errorf("network namespace %s left", n)
		}
	}
	for _, d := range cgroups {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("cgroup %s left", d)
		}
	}
	if _, err := os.Stat(dir); err == nil {
		t.Errorf("work dir %s left", dir)
	}
	mounts, _ := os.ReadFile("/proc/self/mountinfo")
	if strings.Contains(string(mounts), dir) {
		t.Errorf("mounts left under %s", dir)
	}
	for _, p := range pids {
		if p == 0 {
			continue
		}
		// Gone, or a zombie waiting for its new parent to reap it.
		if stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p)); err == nil {
			if _, rest, _ := strings.Cut(string(stat), ") "); !strings.HasPrefix(rest, "Z") {
				t.Errorf("container PID 1 %d still alive: %s", p, stat)
			}
		}
	}
	for _, m := range []string{"/run/systemd/nspawn/propagate"} {
		entries, _ := os.ReadDir(m)
		for _, e := range entries {
			if strings.HasPrefix(e.Name(), "hostlab-"+strings.TrimPrefix(filepath.Base(dir), "hostlab-")) {
				t.Errorf("%s/%s left", m, e.Name())
			}
		}
	}
}
