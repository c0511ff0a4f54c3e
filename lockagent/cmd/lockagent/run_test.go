package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// sh runs a shell script as the locked command.
func sh(script string) []string { return []string{"--", "sh", "-c", script} }

func args(flags []string, command []string) []string { return append(flags, command...) }

// TestRunPassesLockToCommand: the command sees the key, the fencing token, the initial
// validity deadline and the TTL, and not the lock's secret token.
func TestRunPassesLockToCommand(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	dir := t.TempDir()
	env := clusterEnv(cluster)
	script := `printf '%s\n%s\n%s\n%s\n' "$LOCKAGENT_KEY" "$LOCKAGENT_FENCE" "$LOCKAGENT_DEADLINE" "$LOCKAGENT_TTL" > "$0"; env > "$0.env"`

	var fences []uint64
	for i := range 2 {
		out := filepath.Join(dir, fmt.Sprintf("out%d", i))
		before := time.Now()
		code, _, stderr := runAgent(t, env, args([]string{"run", "--key", "env-key", "--ttl", "10s"}, []string{"--", "sh", "-c", script, out})...)
		after := time.Now()
		if code != 0 {
			t.Fatalf("run %d exited %d; stderr:\n%s", i, code, stderr)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		if len(lines) != 4 {
			t.Fatalf("command saw %q, want key, fence, deadline, ttl", b)
		}
		if lines[0] != "env-key" {
			t.Errorf("LOCKAGENT_KEY = %q, want env-key", lines[0])
		}
		fence, err := strconv.ParseUint(lines[1], 10, 64)
		if err != nil || fence == 0 {
			t.Errorf("LOCKAGENT_FENCE = %q, want a positive number (%v)", lines[1], err)
		}
		fences = append(fences, fence)
		deadline, err := time.Parse(time.RFC3339Nano, lines[2])
		if err != nil {
			t.Errorf("LOCKAGENT_DEADLINE = %q is not RFC 3339: %v", lines[2], err)
		}
		// The validity starts after lockagent started and is shorter than the TTL.
		if !deadline.After(before) || !deadline.Before(after.Add(10*time.Second)) {
			t.Errorf("LOCKAGENT_DEADLINE %v not within (%v, %v + TTL)", deadline, before, after)
		}
		if lines[3] != "10s" {
			t.Errorf("LOCKAGENT_TTL = %q, want 10s", lines[3])
		}
		envDump, err := os.ReadFile(out + ".env")
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(envDump), "LOCKAGENT_TOKEN") {
			t.Errorf("the lock's token leaked into the command's environment")
		}
	}
	if fences[1] <= fences[0] {
		t.Errorf("fences %v: the second holder's must be larger", fences)
	}
	if n := keyCopies(t, cluster, "env-key"); n != 0 {
		t.Errorf("lock left on %d masters after the command ended", n)
	}
}

// TestRunExitCode: the command's own code passes through, a signal death is 128+N, and
// the lock is released on every path.
func TestRunExitCode(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	env := clusterEnv(cluster)
	tests := []struct {
		name   string
		script string
		want   int
	}{
		{"success is 0", "exit 0", 0},
		{"failure 1 passes through", "exit 1", 1},
		{"code 42 passes through", "exit 42", 42},
		{"killed by SIGTERM is 143", "kill -TERM $$", 128 + int(syscall.SIGTERM)},
		{"killed by SIGKILL is 137", "kill -KILL $$", 128 + int(syscall.SIGKILL)},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			key := fmt.Sprintf("exit-%d", i)
			code, _, stderr := runAgent(t, env, args([]string{"run", "--key", key, "--ttl", "10s"}, sh(tt.script))...)
			if code != tt.want {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.want, stderr)
			}
			if n := keyCopies(t, cluster, key); n != 0 {
				t.Errorf("lock left on %d masters", n)
			}
		})
	}
}

// holdLock starts a `run` whose command signals it started and then waits for a release
// file; it returns the process and the path that lets the command finish.
func holdLock(t *testing.T, env []string, key string) (*agentProc, string) {
	t.Helper()
	dir := t.TempDir()
	started, release, pid := filepath.Join(dir, "started"), filepath.Join(dir, "release"), filepath.Join(dir, "pid")
	killGroupAtCleanup(t, pid)
	// Bounded loop: the command ends by itself even if the test never releases it.
	script := fmt.Sprintf(`echo $$ > %q; touch %q; i=0; while [ ! -e %q ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done`, pid, started, release)
	p := startAgent(t, env, args([]string{"run", "--key", key, "--ttl", "10s"}, sh(script))...)
	waitForFile(t, started, p)
	return p, release
}

// TestRunNotAcquiredWhileHeld: while one run holds the key, another fails with 75 without
// running its command, with and without waiting; once released, the key is free again.
func TestRunNotAcquiredWhileHeld(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	env := clusterEnv(cluster)
	holder, release := holdLock(t, env, "held")
	marker := filepath.Join(t.TempDir(), "ran")

	for _, wait := range []string{"0", "300ms"} {
		t.Run("wait "+wait, func(t *testing.T) {
			code, _, stderr := runAgent(t, env, args([]string{"run", "--key", "held", "--wait", wait}, sh("touch "+marker))...)
			if code != exitNotAcquired {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitNotAcquired, stderr)
			}
			if !strings.Contains(stderr, "held by someone else") {
				t.Errorf("stderr does not say why:\n%s", stderr)
			}
			if _, err := os.Stat(marker); err == nil {
				t.Error("the command ran without the lock")
			}
		})
	}

	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := holder.wait(t); code != 0 {
		t.Fatalf("holder exited %d; stderr:\n%s", code, holder.stderr.String())
	}
	if code, _, stderr := runAgent(t, env, args([]string{"run", "--key", "held"}, sh("touch "+marker))...); code != 0 {
		t.Fatalf("after the release, run exited %d; stderr:\n%s", code, stderr)
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("the command did not run once the lock was free")
	}
}

// TestRunSerializes: concurrent runs on one key execute their commands one at a time, and
// each later holder gets a larger fencing token.
func TestRunSerializes(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	env := clusterEnv(cluster)
	logFile := filepath.Join(t.TempDir(), "log")
	const runs = 4
	// The sleep between the markers gives an overlap every chance to show.
	script := fmt.Sprintf(`echo "start $LOCKAGENT_FENCE" >> %q; sleep 0.2; echo "end $LOCKAGENT_FENCE" >> %q`, logFile, logFile)
	var wg sync.WaitGroup
	procs := make([]*agentProc, runs)
	for i := range procs {
		procs[i] = startAgent(t, env, args([]string{"run", "--key", "serial", "--wait", "50s"}, sh(script))...)
	}
	for i, p := range procs {
		wg.Go(func() {
			if code := p.wait(t); code != 0 {
				t.Errorf("run %d exited %d; stderr:\n%s", i, code, p.stderr.String())
			}
		})
	}
	wg.Wait()
	b, err := os.ReadFile(logFile)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != 2*runs {
		t.Fatalf("log has %d lines, want %d:\n%s", len(lines), 2*runs, b)
	}
	var last uint64
	for i := 0; i < len(lines); i += 2 {
		var fence, endFence uint64
		if _, err := fmt.Sscanf(lines[i], "start %d", &fence); err != nil {
			t.Fatalf("line %d %q: want a start marker (commands interleaved):\n%s", i, lines[i], b)
		}
		if _, err := fmt.Sscanf(lines[i+1], "end %d", &endFence); err != nil || endFence != fence {
			t.Fatalf("line %d %q: want the end of holder %d (commands interleaved):\n%s", i+1, lines[i+1], fence, b)
		}
		if fence <= last {
			t.Errorf("fence %d after %d: fencing tokens must increase with each holder", fence, last)
		}
		last = fence
	}
}

// TestRunStopsCommandWhenLockLost: when another holder's token replaces ours on every
// master while the command runs (our lock expired and someone else took it), renewal
// fails, the command is stopped (SIGTERM, then SIGKILL after
// --kill-grace if it ignores SIGTERM) and lockagent exits 70.
func TestRunStopsCommandWhenLockLost(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	env := clusterEnv(cluster)
	tests := []struct {
		name string
		// trap is the command's SIGTERM handling; it writes "term" to $TERMFILE if it runs.
		trap     string
		wantTerm bool
	}{
		{"command stops on SIGTERM", `trap 'echo term > "$TERMFILE"; exit 0' TERM`, true},
		{"command ignoring SIGTERM is killed", `trap '' TERM`, false},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			key := fmt.Sprintf("lost-%d", i)
			started, pid, termFile := filepath.Join(dir, "started"), filepath.Join(dir, "pid"), filepath.Join(dir, "term")
			killGroupAtCleanup(t, pid)
			script := fmt.Sprintf(`TERMFILE=%q; %s; echo $$ > %q; touch %q; i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; echo finished > "$TERMFILE"`,
				termFile, tt.trap, pid, started)
			p := startAgent(t, env, args([]string{"run", "--key", key, "--ttl", "3s", "--kill-grace", "300ms"}, sh(script))...)
			waitForFile(t, started, p)
			// Not a plain DEL: renewal sets a missing key again (by design, so that a holder
			// does not drift down to a bare majority); a foreign token is a real loss.
			for _, m := range cluster.Masters {
				if err := m.Admin().Set(context.Background(), key, "another-holder", 30*time.Second).Err(); err != nil {
					t.Fatalf("SET on %s: %v", m.Addr, err)
				}
			}
			if code := p.wait(t); code != exitLost {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitLost, p.stderr.String())
			}
			if !strings.Contains(p.stderr.String(), "lost") {
				t.Errorf("stderr does not say the lock was lost:\n%s", p.stderr.String())
			}
			got, _ := os.ReadFile(termFile)
			if tt.wantTerm && strings.TrimSpace(string(got)) != "term" {
				t.Errorf("command did not get SIGTERM (term file %q)", got)
			}
			if !tt.wantTerm && len(got) != 0 {
				t.Errorf("command was not killed: term file %q", got)
			}
			if processAlive(t, pid) {
				t.Error("the command is still running after lockagent exited")
			}
		})
	}
}

// TestRunForwardsSignals: SIGINT/SIGTERM sent to lockagent reach the command; the
// command's exit code passes through and the lock is released.
func TestRunForwardsSignals(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	env := clusterEnv(cluster)
	for i, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		t.Run(sig.String(), func(t *testing.T) {
			dir := t.TempDir()
			key := fmt.Sprintf("signal-%d", i)
			started, pid, got := filepath.Join(dir, "started"), filepath.Join(dir, "pid"), filepath.Join(dir, "got")
			killGroupAtCleanup(t, pid)
			script := fmt.Sprintf(`trap 'echo INT > %[1]q; exit 7' INT; trap 'echo TERM > %[1]q; exit 8' TERM; echo $$ > %[2]q; touch %[3]q; i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done`,
				got, pid, started)
			p := startAgent(t, env, args([]string{"run", "--key", key}, sh(script))...)
			waitForFile(t, started, p)
			if err := p.cmd.Process.Signal(sig); err != nil {
				t.Fatal(err)
			}
			want := map[syscall.Signal]int{syscall.SIGINT: 7, syscall.SIGTERM: 8}[sig]
			if code := p.wait(t); code != want {
				t.Errorf("exit code %d, want the command's %d; stderr:\n%s", code, want, p.stderr.String())
			}
			b, _ := os.ReadFile(got)
			if wantName := map[syscall.Signal]string{syscall.SIGINT: "INT", syscall.SIGTERM: "TERM"}[sig]; strings.TrimSpace(string(b)) != wantName {
				t.Errorf("command received %q, want %s", b, wantName)
			}
			if n := keyCopies(t, cluster, key); n != 0 {
				t.Errorf("lock left on %d masters", n)
			}
		})
	}
}

// TestRunInterruptedWhileWaiting: a signal while waiting for the lock ends the wait with
// 128+N; the command never starts.
func TestRunInterruptedWhileWaiting(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	env := clusterEnv(cluster)
	_, release := holdLock(t, env, "waited")
	defer os.WriteFile(release, nil, 0o600)
	marker := filepath.Join(t.TempDir(), "ran")
	p := startAgent(t, env, args([]string{"run", "--key", "waited", "--wait", "50s", "--log-level", "info"}, sh("touch "+marker))...)
	waitForOutput(t, p, "acquiring lock")
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 128+int(syscall.SIGINT) {
		t.Errorf("exit code %d, want %d; stderr:\n%s", code, 128+int(syscall.SIGINT), p.stderr.String())
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran although the wait was interrupted")
	}
}

// TestRunMastersUnavailable: with no master answering, run (one attempt) exits 69, names
// the cause of each master's failure, and runs nothing.
func TestRunMastersUnavailable(t *testing.T) {
	var endpoints []string
	host := redistest.Loopback(t) // the ports stay closed: no other test listens there
	for range 3 {
		port, err := redistest.FreePort(host)
		if err != nil {
			t.Fatal(err)
		}
		endpoints = append(endpoints, fmt.Sprintf("%s:%d", host, port))
	}
	marker := filepath.Join(t.TempDir(), "ran")
	env := []string{"LOCKAGENT_ENDPOINTS=" + strings.Join(endpoints, ","), "LOCKAGENT_PASSWORD=x"}
	code, _, stderr := runAgent(t, env, args([]string{"run", "--key", "k", "--wait", "0"}, sh("touch "+marker))...)
	if code != exitUnavailable {
		t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitUnavailable, stderr)
	}
	if !strings.Contains(stderr, "unavailable") {
		t.Errorf("stderr does not say the masters are unavailable:\n%s", stderr)
	}
	if n := strings.Count(stderr, "): connection refused"); n != 3 {
		t.Errorf("stderr names %d refused connections, want 3 (no timeouts: nothing listens):\n%s", n, stderr)
	}
	if !strings.Contains(stderr, "0/3 masters confirmed, need 2") {
		t.Errorf("stderr does not count the 3 masters:\n%s", stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran without a lock")
	}
}

// TestRunCommandNotFound: a missing command is 127 and takes no lock.
func TestRunCommandNotFound(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	code, _, stderr := runAgent(t, clusterEnv(cluster), "run", "--key", "nf", "--", "/nonexistent/command")
	if code != exitNotFound {
		t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitNotFound, stderr)
	}
	if n := keyCopies(t, cluster, "nf"); n != 0 {
		t.Errorf("lock taken on %d masters for a command that cannot run", n)
	}
}

// TestRunConfigFile: the deployment can come from agent.json (the module's agent_config
// output), with a flag overriding it.
func TestRunConfigFile(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	conf := filepath.Join(t.TempDir(), "agent.json")
	json := fmt.Sprintf(`{"endpoints":["%s"],"username":%q,"password":"wrong","max_lock_ttl":"20s","quorum":2}`,
		strings.Join(cluster.Addrs(), `","`), redistest.LockUser)
	if err := os.WriteFile(conf, []byte(json), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Run("config password is used", func(t *testing.T) {
		code, _, stderr := runAgent(t, nil, "run", "-c", conf, "--key", "cfg", "--", "true")
		if code != exitDenied || !strings.Contains(stderr, "WRONGPASS") {
			t.Errorf("with the wrong password from agent.json: exit %d, want %d showing WRONGPASS; stderr:\n%s", code, exitDenied, stderr)
		}
	})
	t.Run("flag overrides config", func(t *testing.T) {
		code, _, stderr := runAgent(t, nil, "run", "-c", conf, "--password", redistest.LockPassword, "--key", "cfg", "--", "true")
		if code != 0 {
			t.Errorf("exit %d, want 0; stderr:\n%s", code, stderr)
		}
	})
	t.Run("quorum that does not match the endpoints is refused", func(t *testing.T) {
		bad := filepath.Join(t.TempDir(), "agent.json")
		if err := os.WriteFile(bad, []byte(strings.Replace(json, `"quorum":2`, `"quorum":3`, 1)), 0o600); err != nil {
			t.Fatal(err)
		}
		code, _, stderr := runAgent(t, nil, "run", "-c", bad, "--password", redistest.LockPassword, "--key", "cfg", "--", "true")
		if code != exitUsage || !strings.Contains(stderr, "quorum") {
			t.Errorf("exit %d, want %d naming quorum; stderr:\n%s", code, exitUsage, stderr)
		}
	})
	t.Run("max_lock_ttl from config refuses a longer ttl", func(t *testing.T) {
		code, _, stderr := runAgent(t, nil, "run", "-c", conf, "--password", redistest.LockPassword, "--key", "cfg", "--ttl", "25s", "--", "true")
		if code != exitUsage || !strings.Contains(stderr, "--ttl 25s") {
			t.Errorf("exit %d, want %d naming --ttl; stderr:\n%s", code, exitUsage, stderr)
		}
	})
}

// TestRunUsageErrors: bad input is refused with 64 before anything is contacted, and the
// message names the flag or field to fix.
func TestRunUsageErrors(t *testing.T) {
	for _, kv := range os.Environ() {
		if name, _, _ := strings.Cut(kv, "="); strings.HasPrefix(name, "LOCKAGENT_") {
			t.Setenv(name, "")
		}
	}
	good := []string{"--endpoints", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "--password", "p"}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing key", args(good, sh("true")), "--key"},
		{"missing command", append(good, "--key", "k"), "no command"},
		{"unknown flag", args(append(good, "--key", "k", "--frobnicate"), sh("true")), "frobnicate"},
		{"zero ttl", args(append(good, "--key", "k", "--ttl", "0s"), sh("true")), "--ttl"},
		{"negative wait", args(append(good, "--key", "k", "--wait", "-1s"), sh("true")), "--wait"},
		{"zero kill grace", args(append(good, "--key", "k", "--kill-grace", "0s"), sh("true")), "--kill-grace"},
		{"negative max duration", args(append(good, "--key", "k", "--max-duration", "-1s"), sh("true")), "--max-duration"},
		{"bad wait", args(append(good, "--key", "k", "--wait", "always"), sh("true")), "forever"},
		{"conflict exit code out of range", args(append(good, "--key", "k", "--conflict-exit-code", "300"), sh("true")), "--conflict-exit-code"},
		{"fencing register name", args(append(good, "--key", "jobs:fence"), sh("true")), ":fence"},
		{"wait queue name", args(append(good, "--key", "jobs:waitq"), sh("true")), ":waitq"},
		{"wait queue page name", args(append(good, "--key", "jobs:waitq:1"), sh("true")), ":waitq:"},
		{"bad log level", args(append(good, "--key", "k", "--log-level", "loud"), sh("true")), "--log-level"},
		{"ttl above max lock ttl", args(append(good, "--key", "k", "--ttl", "40s", "--max-lock-ttl", "30s"), sh("true")), "--ttl 40s"},
		{"no endpoints", args([]string{"--password", "p", "--key", "k"}, sh("true")), "endpoints"},
		{"even endpoint count", args([]string{"--endpoints", "127.0.0.1:1,127.0.0.1:2", "--password", "p", "--key", "k"}, sh("true")), "odd number"},
		{"endpoint without port", args([]string{"--endpoints", "a:1,b:2,c", "--password", "p", "--key", "k"}, sh("true")), "host:port"},
		{"no password", args([]string{"--endpoints", "127.0.0.1:1,127.0.0.1:2,127.0.0.1:3", "--key", "k"}, sh("true")), "LOCKAGENT_PASSWORD"},
		{"missing config file", args([]string{"-c", "/nonexistent/agent.json", "--key", "k"}, sh("true")), "agent.json"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := runMain(context.Background(), tt.args, &stdout, &stderr)
			if code != exitUsage {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitUsage, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.want) {
				t.Errorf("stderr does not name %q:\n%s", tt.want, stderr.String())
			}
		})
	}
}

// TestRunDurableRelease: run's release is applied in memory only (no DEL in any master's
// AOF) unless --durable-release, which logs it on the masters that confirmed it.
func TestRunDurableRelease(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	env := clusterEnv(cluster)
	loggedDels := func(key string) int {
		t.Helper()
		del := []byte(fmt.Sprintf("del\r\n$%d\r\n%s\r\n", len(key), key))
		n := 0
		for _, m := range cluster.Masters {
			b, err := m.AOF()
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Contains(bytes.ToLower(b), del) {
				n++
			}
		}
		return n
	}
	for _, tc := range []struct {
		key   string
		flags []string
		want  func(int) bool
		what  string
	}{
		{"unlogged-release", nil, func(n int) bool { return n == 0 }, "on no master"},
		{"logged-release", []string{"--durable-release"}, func(n int) bool { return n >= 2 }, "on a majority"},
	} {
		flags := append([]string{"run", "--key", tc.key, "--ttl", "10s"}, tc.flags...)
		if code, _, stderr := runAgent(t, env, args(flags, sh("true"))...); code != 0 {
			t.Fatalf("run %v exited %d; stderr:\n%s", tc.flags, code, stderr)
		}
		if n := keyCopies(t, cluster, tc.key); n != 0 {
			t.Errorf("run %v left the lock on %d masters", tc.flags, n)
		}
		if n := loggedDels(tc.key); !tc.want(n) {
			t.Errorf("run %v: the release's DEL is in %d masters' AOF; want it %s", tc.flags, n, tc.what)
		}
	}
}

// killAtCleanup stops, by the pid a test command wrote, a process that could outlive a
// failed test (and its group, when it leads one).
func killAtCleanup(t *testing.T, pidFile string) {
	t.Cleanup(func() {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return
		}
		var pid int
		if _, err := fmt.Sscan(string(b), &pid); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	})
}

// lingeringScript is a process the command leaves behind: it writes its pid, waits until
// the command's shell (pid $1) is gone, reaped, then says so (started) and works until the
// test creates the release file (bounded), then writes done.
func lingeringScript(pid, started, release, done string) string {
	return fmt.Sprintf(`echo $$ > %q; i=0; while kill -0 "$1" 2>/dev/null && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; touch %q; i=0; while [ ! -e %q ] && [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done; touch %q`,
		pid, started, release, done)
}

// TestRunHoldsLockUntilEveryProcessExits: the lock is held until the last process the
// command started has exited, not just the command: a background job in its process
// group, and a daemon that left it (setsid). Meanwhile another run gets the conflict exit
// code; lockagent exits only after that process did.
func TestRunHoldsLockUntilEveryProcessExits(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	env := clusterEnv(cluster)
	for i, tc := range []struct {
		name   string
		launch string // how the command starts the lingering script (given as $0 'script' $1)
	}{
		{"background job", `sh -c "$0" inner $$ & exit 0`},
		{"setsid daemon", `setsid sh -c "$0" inner $$ & exit 0`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			key := fmt.Sprintf("linger-%d", i)
			pid, started, release, done := filepath.Join(dir, "pid"), filepath.Join(dir, "started"), filepath.Join(dir, "release"), filepath.Join(dir, "done")
			killAtCleanup(t, pid)
			p := startAgent(t, env, "run", "--key", key, "--ttl", "3s", "--", "sh", "-c", tc.launch, lingeringScript(pid, started, release, done))
			// started: the command's shell has exited and was reaped; its child still works.
			waitForFile(t, started, p)
			code, _, stderr := runAgent(t, env, args([]string{"run", "--key", key, "--wait", "0", "--conflict-exit-code", "42"}, sh("true"))...)
			if code != 42 {
				t.Errorf("second run while the first command's child works: exit %d, want the conflict exit code 42; stderr:\n%s", code, stderr)
			}
			select {
			case <-p.done:
				t.Errorf("lockagent exited (%d) while a process of its command still runs", p.cmd.ProcessState.ExitCode())
			default:
			}
			if err := os.WriteFile(release, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			if code := p.wait(t); code != 0 {
				t.Errorf("holder exited %d, want the command's 0; stderr:\n%s", code, p.stderr.String())
			}
			if _, err := os.Stat(done); err != nil {
				t.Error("lockagent exited before the last process of the command")
			}
			if n := keyCopies(t, cluster, key); n != 0 {
				t.Errorf("lock left on %d masters", n)
			}
		})
	}
}

// TestRunSignalKeepsLockForSurvivors: SIGINT is forwarded; a background job that ignores
// it keeps working, and the lock stays held until it exits. The exit code is the
// command's (killed by SIGINT: 130).
func TestRunSignalKeepsLockForSurvivors(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	env := clusterEnv(cluster)
	dir := t.TempDir()
	pid, started, gone, release, done := filepath.Join(dir, "pid"), filepath.Join(dir, "started"), filepath.Join(dir, "gone"), filepath.Join(dir, "release"), filepath.Join(dir, "done")
	killAtCleanup(t, pid)
	inner := fmt.Sprintf(`trap "" INT; echo $$ > %q; touch %q; i=0; while [ ! -e %q ] && [ $i -lt 1200 ]; do kill -0 "$1" 2>/dev/null || touch %q; sleep 0.05; i=$((i+1)); done; touch %q`,
		pid, started, release, gone, done)
	p := startAgent(t, env, "run", "--key", "survivor", "--ttl", "3s", "--", "sh", "-c", `sh -c "$0" inner $$ & wait`, inner)
	waitForFile(t, started, p)
	if err := p.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	waitForFile(t, gone, p) // the command's shell died of SIGINT and was reaped
	code, _, stderr := runAgent(t, env, args([]string{"run", "--key", "survivor", "--wait", "0"}, sh("true"))...)
	if code != exitNotAcquired {
		t.Errorf("second run while the survivor works: exit %d, want %d; stderr:\n%s", code, exitNotAcquired, stderr)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := p.wait(t); code != 128+int(syscall.SIGINT) {
		t.Errorf("holder exited %d, want %d (the command died of SIGINT); stderr:\n%s", code, 128+int(syscall.SIGINT), p.stderr.String())
	}
	if _, err := os.Stat(done); err != nil {
		t.Error("lockagent exited before the survivor")
	}
	if n := keyCopies(t, cluster, "survivor"); n != 0 {
		t.Errorf("lock left on %d masters", n)
	}
}

// TestRunStopsDaemonsWhenLockLost: on lock loss, processes that left the command's
// process group and session are stopped too.
func TestRunStopsDaemonsWhenLockLost(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	env := clusterEnv(cluster)
	dir := t.TempDir()
	pid, started := filepath.Join(dir, "pid"), filepath.Join(dir, "started")
	killAtCleanup(t, pid)
	daemon := fmt.Sprintf(`echo $$ > %q; touch %q; i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done`, pid, started)
	p := startAgent(t, env, "run", "--key", "lost-daemon", "--ttl", "3s", "--kill-grace", "300ms", "--", "sh", "-c", `setsid sh -c "$0" & exit 0`, daemon)
	waitForFile(t, started, p)
	for _, m := range cluster.Masters {
		if err := m.Admin().Set(context.Background(), "lost-daemon", "another-holder", 30*time.Second).Err(); err != nil {
			t.Fatalf("SET on %s: %v", m.Addr, err)
		}
	}
	if code := p.wait(t); code != exitLost {
		t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitLost, p.stderr.String())
	}
	if processAlive(t, pid) {
		t.Error("the setsid'd daemon still runs after lockagent lost the lock and exited")
	}
}

// TestRunDenied: a wrong password ends run at once (even with the default --wait
// forever) with 77 and the server's message.
func TestRunDenied(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	marker := filepath.Join(t.TempDir(), "ran")
	env := []string{"LOCKAGENT_ENDPOINTS=" + strings.Join(cluster.Addrs(), ","), "LOCKAGENT_PASSWORD=not-the-password"}
	code, _, stderr := runAgent(t, env, args([]string{"run", "--key", "denied"}, sh("touch "+marker))...)
	if code != exitDenied {
		t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitDenied, stderr)
	}
	if !strings.Contains(stderr, "WRONGPASS") || !strings.Contains(stderr, "access denied") {
		t.Errorf("stderr does not show the server's refusal:\n%s", stderr)
	}
	if strings.Contains(stderr, "unexpected type") {
		t.Errorf("stderr shows a parse error instead of the cause:\n%s", stderr)
	}
	// One refusal from every master reads once, with how many refused.
	t.Logf("stderr of a wrong password:\n%s", stderr)
	if n := strings.Count(stderr, "WRONGPASS"); n != 1 || !strings.Contains(stderr, "3 of 3 masters (") || lines(stderr) != 1 {
		t.Errorf("want the masters' refusal once (\"3 of 3 masters (...): ... WRONGPASS\") on one line; WRONGPASS %d times:\n%s", n, stderr)
	}
	if _, err := os.Stat(marker); err == nil {
		t.Error("the command ran without a lock")
	}
}

// TestRunWaitsForever: --wait forever waits for the holder, saying on stderr that the
// lock is held, and runs the command once it is released.
func TestRunWaitsForever(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	env := clusterEnv(cluster)
	holder, release := holdLock(t, env, "forever")
	marker := filepath.Join(t.TempDir(), "ran")
	p := startAgent(t, env, args([]string{"run", "--key", "forever", "--wait", "forever"}, sh("touch "+marker))...)
	waitForOutput(t, p, "held by another client")
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if code := holder.wait(t); code != 0 {
		t.Fatalf("holder exited %d; stderr:\n%s", code, holder.stderr.String())
	}
	if code := p.wait(t); code != 0 {
		t.Errorf("waiter exited %d; stderr:\n%s", code, p.stderr.String())
	}
	if _, err := os.Stat(marker); err != nil {
		t.Error("the waiter's command did not run")
	}
}

// TestRunMaxDuration: at --max-duration the command is stopped while the lock is still
// held, renewal ends with the release, and run exits 124.
func TestRunMaxDuration(t *testing.T) {
	cluster := redistest.Start(t, redistest.Options{Masters: 3})
	env := clusterEnv(cluster)
	dir := t.TempDir()
	pid, started := filepath.Join(dir, "pid"), filepath.Join(dir, "started")
	killGroupAtCleanup(t, pid)
	script := fmt.Sprintf(`echo $$ > %q; touch %q; i=0; while [ $i -lt 1200 ]; do sleep 0.05; i=$((i+1)); done`, pid, started)
	p := startAgent(t, env, args([]string{"run", "--key", "bounded", "--ttl", "3s", "--max-duration", "1s", "--kill-grace", "300ms"}, sh(script))...)
	waitForFile(t, started, p)
	if code := p.wait(t); code != exitMaxDuration {
		t.Errorf("exit code %d, want %d; stderr:\n%s", code, exitMaxDuration, p.stderr.String())
	}
	if !strings.Contains(p.stderr.String(), "--max-duration") {
		t.Errorf("stderr does not name --max-duration:\n%s", p.stderr.String())
	}
	if processAlive(t, pid) {
		t.Error("the command still runs after --max-duration")
	}
	if n := keyCopies(t, cluster, "bounded"); n != 0 {
		t.Errorf("lock left on %d masters: renewal did not stop with the release", n)
	}
}
