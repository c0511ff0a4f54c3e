package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// The lock user of the test deployment: one application of several, confined to its prefix.
var app = redisconf.LockUser{Name: "reports", Password: "reports-secret-for-tests", KeyPrefix: "reports:"}

// TestProgramAgainstRealMasters builds the README's program and runs it against real
// masters with the kit's configuration and ACL, reading a client file as the modules write
// it (client_config): it locks under the user's prefix, with a fence, and releases.
// Without the prefix in the file the user is refused (NOPERM) and the error says why.
func TestProgramAgainstRealMasters(t *testing.T) {
	prog := buildProgram(t)
	for _, tlsOn := range []bool{false, true} {
		name := "plain"
		if tlsOn {
			name = "TLS with the deployment's CA"
		}
		t.Run(name, func(t *testing.T) {
			cl := redistest.Start(t, redistest.Options{Masters: 3, LockUsers: []redisconf.LockUser{app}, TLS: tlsOn})
			file := clientFile(t, cl, app.KeyPrefix)
			for _, m := range cl.Masters { // the harness's own start leaves some: count from here
				if err := m.Admin().ConfigResetStat(context.Background()).Err(); err != nil {
					t.Fatal(err)
				}
			}
			stdout, stderr, err := runProgram(t, prog, file)
			t.Logf("go-client %s:\n%s%s", file, stdout, stderr)
			if err != nil {
				t.Fatalf("go-client: %v", err)
			}
			want := regexp.MustCompile(`^locked reports:nightly-report with fence [1-9][0-9]*, valid for 10s\nreleased\n$`)
			if !want.MatchString(stdout) {
				t.Fatalf("output %q does not match %s", stdout, want)
			}
			ctx := context.Background()
			fenced := 0
			for _, m := range cl.Masters {
				if n, err := m.Admin().Exists(ctx, "reports:nightly-report").Result(); err != nil || n != 0 {
					t.Errorf("%s: the lock key is still there (%d, %v): the release did not reach it", m.Addr, n, err)
				}
				if _, err := m.Admin().Get(ctx, "reports:nightly-report"+redlock.FenceSuffix).Result(); err == nil {
					fenced++
				} else if !errors.Is(err, redis.Nil) {
					t.Fatal(err)
				}
			}
			if fenced < 2 {
				t.Errorf("the fence register under the prefix is on %d masters, want a majority", fenced)
			}
			// The handshake sent nothing the lock user may not run (redlock.MasterOptions).
			for _, m := range cl.Masters {
				stats, err := m.Admin().Info(ctx, "errorstats").Result()
				if err != nil {
					t.Fatal(err)
				}
				if bytes.Contains([]byte(stats), []byte("errorstat_")) {
					t.Errorf("%s: the program left errors on the server:\n%s", m.Addr, stats)
				}
			}
		})
	}
	t.Run("a client file without the key prefix: NOPERM, explained", func(t *testing.T) {
		cl := redistest.Start(t, redistest.Options{Masters: 3, LockUsers: []redisconf.LockUser{app}})
		_, stderr, err := runProgram(t, prog, clientFile(t, cl, ""))
		t.Logf("go-client: %s", stderr)
		var exit *exec.ExitError
		if !errors.As(err, &exit) || exit.ExitCode() != 1 {
			t.Fatalf("go-client: %v, want exit status 1", err)
		}
		for _, want := range []string{"NOPERM", "key_prefix", "redlock.Open"} {
			if !bytes.Contains([]byte(stderr), []byte(want)) {
				t.Errorf("stderr %q does not mention %q", stderr, want)
			}
		}
	})
}

// buildProgram builds this package's program with the go command on PATH (the one make
// test runs).
func buildProgram(t *testing.T) string {
	t.Helper()
	prog := filepath.Join(t.TempDir(), "go-client")
	out, err := exec.Command("go", "build", "-o", prog, ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return prog
}

// clientFile writes cl's client file the way the modules render client_config.
func clientFile(t *testing.T, cl *redistest.Cluster, keyPrefix string) string {
	t.Helper()
	var caCertPEM any // null without TLS, as the modules write it
	if cl.CACertPEM != "" {
		caCertPEM = cl.CACertPEM
	}
	b, err := json.Marshal(map[string]any{
		"endpoints": cl.Addrs(), "tls": cl.CACertPEM != "", "ca_cert_pem": caCertPEM,
		"max_lock_ttl": "30s", "restart_delay": "31000ms", "quorum": len(cl.Masters)/2 + 1,
		"username": app.Name, "password": app.Password, "key_prefix": keyPrefix,
	})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "client.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func runProgram(t *testing.T, prog, file string) (stdout, stderr string, err error) {
	t.Helper()
	var out, errOut bytes.Buffer
	cmd := exec.Command(prog, file)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	return out.String(), errOut.String(), err
}
