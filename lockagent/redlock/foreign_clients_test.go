package redlock_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// The other Redlock clients the docs name, driven the same way by
// TestForeignClientInterop: node-redlock 4 and 5 (npm, with ioredis 5; the versions are
// pinned by testdata/interop-node/package-lock.json) in a node process each, and redsync
// v4 in this one.

// foreignAttempt is what one acquisition by a foreign client came to.
type foreignAttempt struct {
	OK           bool     `json:"ok"`
	Value        string   `json:"value"`
	Error        string   `json:"error"`
	ClientErrors []string `json:"clientErrors"` // per-master errors (NOPERM, ...)
	WaitMs       int64    `json:"waitMs"`       // from the call to its answer, retries included
}

// foreignRetry is how a foreign client retries an acquisition: count retries after the
// first attempt, each after delay ± jitter.
type foreignRetry struct {
	count         int
	delay, jitter time.Duration
}

// once is a single attempt.
var once = foreignRetry{}

// foreignClient is one other Redlock client with one lock at a time.
type foreignClient interface {
	acquire(t *testing.T, key string, ttl time.Duration, retry foreignRetry) foreignAttempt
	release(t *testing.T) error
}

// requireNode returns the node project's directory with its packages installed from the
// lock file (npm ci), or skips the test where node or npm is missing; with
// REDLOCK_REQUIRE_NODE=1 (CI) a missing node fails instead.
func requireNode(t *testing.T) string {
	t.Helper()
	for _, tool := range []string{"node", "npm"} {
		if _, err := exec.LookPath(tool); err != nil {
			msg := fmt.Sprintf("%s is not on PATH (Debian packages nodejs and npm; make test-deps installs them): node-redlock interop not run", tool)
			if os.Getenv("REDLOCK_REQUIRE_NODE") == "1" {
				t.Fatal(msg + ", and REDLOCK_REQUIRE_NODE=1 requires it")
			}
			t.Skip(msg)
		}
	}
	nodeInstall.Do(func() {
		dir, err := filepath.Abs(filepath.Join("testdata", "interop-node"))
		if err != nil {
			nodeInstall.err = err
			return
		}
		// npm ci installs exactly the lock file's versions (and fails when package.json
		// and the lock file disagree); --prefer-offline reuses npm's cache when it can.
		cmd := exec.Command("npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund", "--prefer-offline")
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			nodeInstall.err = fmt.Errorf("npm ci in %s: %v\n%s", dir, err, out)
			return
		}
		nodeInstall.dir = dir
	})
	if nodeInstall.err != nil {
		t.Fatal(nodeInstall.err)
	}
	return nodeInstall.dir
}

var nodeInstall struct {
	sync.Once
	dir string
	err error
}

// nodeRedlock is one node process running testdata/interop-node/driver.js for one
// node-redlock version ("redlock4", "redlock5").
type nodeRedlock struct {
	stdin  io.WriteCloser
	out    *bufio.Scanner
	stderr *strings.Builder
}

// startNodeRedlock starts the driver as user on cl's masters; ioredisDefaults keeps
// ioredis's default options instead of the guide's. The process quits in t.Cleanup.
func startNodeRedlock(t *testing.T, dir, version string, cl *redistest.Cluster, user, password string, ioredisDefaults bool) *nodeRedlock {
	t.Helper()
	cmd := exec.Command("node", "driver.js", version)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "INTEROP_ENDPOINTS="+strings.Join(cl.Addrs(), ","),
		"INTEROP_USER="+user, "INTEROP_PASSWORD="+password, "INTEROP_IOREDIS_DEFAULTS=0")
	if ioredisDefaults {
		cmd.Env = append(cmd.Env, "INTEROP_IOREDIS_DEFAULTS=1")
	}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	n := &nodeRedlock{stdin: stdin, out: bufio.NewScanner(stdout), stderr: &strings.Builder{}}
	cmd.Stderr = n.stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("node driver.js %s: %v", version, err)
	}
	t.Cleanup(func() {
		_, _ = io.WriteString(stdin, "quit\n")
		_ = stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("node driver.js %s: %v\n%s", version, err, n.stderr)
			}
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill() // by its pid
			<-done
			t.Errorf("node driver.js %s did not quit; killed", version)
		}
	})
	return n
}

func (n *nodeRedlock) call(t *testing.T, line string, reply any) {
	t.Helper()
	if _, err := io.WriteString(n.stdin, line+"\n"); err != nil {
		t.Fatalf("node driver: %v\n%s", err, n.stderr)
	}
	if !n.out.Scan() {
		t.Fatalf("node driver ended without answering %q: %v\n%s", line, n.out.Err(), n.stderr)
	}
	if err := json.Unmarshal(n.out.Bytes(), reply); err != nil {
		t.Fatalf("node driver's answer to %q: %v: %s", line, err, n.out.Bytes())
	}
}

func (n *nodeRedlock) acquire(t *testing.T, key string, ttl time.Duration, retry foreignRetry) foreignAttempt {
	t.Helper()
	var a foreignAttempt
	n.call(t, fmt.Sprintf("acquire %s %d %d %d %d", key, ttl.Milliseconds(), retry.count,
		retry.delay.Milliseconds(), retry.jitter.Milliseconds()), &a)
	return a
}

func (n *nodeRedlock) release(t *testing.T) error {
	t.Helper()
	var r foreignAttempt
	n.call(t, "release", &r)
	if !r.OK {
		return errors.New(r.Error)
	}
	return nil
}

// redsyncClient is go-redsync v4 on user's connections.
type redsyncClient struct {
	rs   *redsync.Redsync
	held *redsync.Mutex
}

func newRedsyncClient(t *testing.T, cl *redistest.Cluster, user, password string) *redsyncClient {
	t.Helper()
	var pools []redsyncredis.Pool
	for _, m := range cl.Masters {
		r := m.ClientAs(user, password)
		t.Cleanup(func() { _ = r.Close() })
		pools = append(pools, goredis.NewPool(r))
	}
	return &redsyncClient{rs: redsync.New(pools...)}
}

func (r *redsyncClient) acquire(t *testing.T, key string, ttl time.Duration, retry foreignRetry) foreignAttempt {
	m := r.rs.NewMutex(key, redsync.WithExpiry(ttl), redsync.WithTries(retry.count+1),
		redsync.WithRetryDelayFunc(func(int) time.Duration { return jittered(retry) }))
	start := time.Now()
	err := m.LockContext(context.Background())
	a := foreignAttempt{OK: err == nil, Value: m.Value(), WaitMs: time.Since(start).Milliseconds()}
	if err != nil {
		a.Error = err.Error()
		var taken *redsync.ErrTaken
		var nodeErr *redsync.RedisError
		if !errors.As(err, &taken) && errors.As(err, &nodeErr) {
			a.ClientErrors = []string{nodeErr.Error()}
		}
		return a
	}
	r.held = m
	return a
}

func (r *redsyncClient) release(t *testing.T) error {
	if r.held == nil {
		return errors.New("nothing held")
	}
	m := r.held
	r.held = nil
	ok, err := m.UnlockContext(context.Background())
	if err == nil && !ok {
		err = errors.New("redsync: unlock found no majority")
	}
	return err
}

// jittered is retry's delay ± its jitter, as node-redlock draws it.
func jittered(retry foreignRetry) time.Duration {
	if retry.jitter <= 0 {
		return retry.delay
	}
	return retry.delay + time.Duration(time.Now().UnixNano()%int64(2*retry.jitter)) - retry.jitter
}

// setUserRight runs ACL SETUSER user rule on every master (a negative control's change).
func setUserRight(t *testing.T, cl *redistest.Cluster, user, rule string) {
	t.Helper()
	for _, m := range cl.Masters {
		if err := m.Admin().Do(adminCtx(t), "ACL", "SETUSER", user, rule).Err(); err != nil {
			t.Fatalf("ACL SETUSER %s %s on %s: %v", user, rule, m.Addr, err)
		}
	}
}

// commandErrors sums errorstat lines (INFO errorstats) across cl's masters: how many
// error replies the masters sent, by error code.
func commandErrors(t *testing.T, cl *redistest.Cluster) map[string]int {
	t.Helper()
	out := map[string]int{}
	for _, m := range cl.Masters {
		info, err := m.Admin().Info(adminCtx(t), "errorstats").Result()
		if err != nil {
			t.Fatalf("INFO errorstats on %s: %v", m.Addr, err)
		}
		for _, line := range strings.Split(info, "\n") {
			var code string
			var count int
			if name, rest, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && strings.HasPrefix(name, "errorstat_") {
				code = strings.TrimPrefix(name, "errorstat_")
				if _, err := fmt.Sscanf(rest, "count=%d", &count); err == nil {
					out[code] += count
				}
			}
		}
	}
	return out
}
