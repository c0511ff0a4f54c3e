package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// lockagentBin is the lockagent binary built once for the tests that need a real process
// (exit codes, signals, the command's process group).
var lockagentBin string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "lockagent-test-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	lockagentBin = filepath.Join(dir, "lockagent")
	if out, err := exec.Command("go", "build", "-o", lockagentBin, ".").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build lockagent: %v\n%s", err, out)
		_ = os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// hangGuard bounds every wait in these tests so that a bug fails the test instead of
// hanging it; it is never a pass/fail threshold on speed.
const hangGuard = 60 * time.Second

// syncBuffer is a bytes.Buffer safe to read while a process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// agentProc is one lockagent process started by a test.
type agentProc struct {
	cmd    *exec.Cmd
	stdout syncBuffer
	stderr syncBuffer
	done   chan struct{}
}

// startAgent starts the lockagent binary with a clean LOCKAGENT_* environment plus env,
// and stops it by pid in t.Cleanup if it is still running. A `run` gets a generous
// --node-timeout: the tests share a busy machine whose fsyncs can outlast the default
// derived from a short TTL, and they are not about timeouts.
func startAgent(t *testing.T, env []string, args ...string) *agentProc {
	t.Helper()
	if len(args) > 0 && args[0] == "run" {
		args = append([]string{"run", "--node-timeout", "500ms"}, args[1:]...)
	}
	p := &agentProc{done: make(chan struct{})}
	p.cmd = exec.Command(lockagentBin, args...)
	p.cmd.Env = append(cleanEnv(), env...)
	p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatalf("start lockagent: %v", err)
	}
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(func() {
		select {
		case <-p.done:
		default:
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	})
	return p
}

// wait returns the exit code (-1 when killed by a signal).
func (p *agentProc) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-p.done:
	case <-time.After(hangGuard):
		t.Fatalf("lockagent %v did not exit; stderr:\n%s", p.cmd.Args[1:], p.stderr.String())
	}
	return p.cmd.ProcessState.ExitCode()
}

// runAgent runs lockagent to completion.
func runAgent(t *testing.T, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	p := startAgent(t, env, args...)
	code = p.wait(t)
	return code, p.stdout.String(), p.stderr.String()
}

// cleanEnv is the test's environment without any LOCKAGENT_* variable.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "LOCKAGENT_") {
			env = append(env, kv)
		}
	}
	return env
}

// clusterEnv points lockagent at the cluster through the environment, as a deployment
// would (the password never on the command line).
func clusterEnv(c *redistest.Cluster) []string {
	return []string{
		"LOCKAGENT_ENDPOINTS=" + strings.Join(c.Addrs(), ","),
		"LOCKAGENT_PASSWORD=" + redistest.LockPassword,
	}
}

// waitForFile waits until path exists (a command signalling that it started).
func waitForFile(t *testing.T, path string, p *agentProc) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		if _, err := os.Stat(path); err == nil {
			return
		}
		if p != nil {
			select {
			case <-p.done:
				t.Fatalf("lockagent exited (%d) before %s appeared; stderr:\n%s", p.cmd.ProcessState.ExitCode(), path, p.stderr.String())
			default:
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s did not appear", path)
}

// waitForOutput waits until the process's stderr contains s.
func waitForOutput(t *testing.T, p *agentProc, s string) {
	t.Helper()
	deadline := time.Now().Add(hangGuard)
	for time.Now().Before(deadline) {
		if strings.Contains(p.stderr.String(), s) {
			return
		}
		select {
		case <-p.done:
			t.Fatalf("lockagent exited before writing %q; stderr:\n%s", s, p.stderr.String())
		case <-time.After(10 * time.Millisecond):
		}
	}
	t.Fatalf("lockagent did not write %q; stderr:\n%s", s, p.stderr.String())
}

// killGroupAtCleanup stops, by the pid the command wrote, the process group of a test
// command that could outlive a failed test.
func killGroupAtCleanup(t *testing.T, pidFile string) {
	t.Cleanup(func() {
		b, err := os.ReadFile(pidFile)
		if err != nil {
			return
		}
		var pid int
		if _, err := fmt.Sscan(string(b), &pid); err == nil && pid > 1 {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	})
}

// processAlive reports whether the process whose pid is in pidFile still exists.
func processAlive(t *testing.T, pidFile string) bool {
	t.Helper()
	b, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatalf("read %s: %v", pidFile, err)
	}
	var pid int
	if _, err := fmt.Sscan(string(b), &pid); err != nil {
		t.Fatalf("pid file %s: %v", pidFile, err)
	}
	return syscall.Kill(pid, 0) == nil
}

// keyCopies counts the masters on which key exists.
func keyCopies(t *testing.T, c *redistest.Cluster, key string) int {
	t.Helper()
	n := 0
	for _, m := range c.Masters {
		v, err := m.Admin().Exists(context.Background(), key).Result()
		if err != nil {
			t.Fatalf("EXISTS %s on %s: %v", key, m.Addr, err)
		}
		n += int(v)
	}
	return n
}

func TestDispatch(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		code     int
		stdout   []string
		stderr   []string
		noStdout bool
	}{
		{name: "no command prints usage", args: nil, code: exitUsage, stderr: []string{"lockagent run", "lockagent validate", "lockagent bench"}, noStdout: true},
		{name: "help lists every command", args: []string{"help"}, code: 0, stdout: []string{"lockagent run", "lockagent validate", "lockagent bench", "lockagent version"}},
		{name: "--help is help", args: []string{"--help"}, code: 0, stdout: []string{"lockagent run"}},
		{name: "help run is run's help on stdout", args: []string{"help", "run"}, code: 0, stdout: []string{"--key", "Exit codes"}},
		{name: "help bench is bench's help on stdout", args: []string{"help", "bench"}, code: 0, stdout: []string{"--spawn", "Exit codes"}},
		{name: "help validate is validate's help on stdout", args: []string{"help", "validate"}, code: 0, stdout: []string{"validate"}},
		{name: "help of unknown command", args: []string{"help", "frobnicate"}, code: exitUsage, stderr: []string{`unknown command "frobnicate"`}},
		{name: "version", args: []string{"version"}, code: 0, stdout: []string{"lockagent "}},
		{name: "help functions is functions' help on stdout", args: []string{"help", "functions"}, code: 0, stdout: []string{"FUNCTION LOAD REPLACE", "Exit codes"}},
		{name: "functions takes no argument", args: []string{"functions", "extra"}, code: exitUsage, stderr: []string{`"extra"`}},
		{name: "unknown command", args: []string{"frobnicate"}, code: exitUsage, stderr: []string{`unknown command "frobnicate"`, "lockagent help"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := lockagent(context.Background(), tt.args, &stdout, &stderr)
			if code != tt.code {
				t.Errorf("exit code %d, want %d; stderr:\n%s", code, tt.code, stderr.String())
			}
			for _, s := range tt.stdout {
				if !strings.Contains(stdout.String(), s) {
					t.Errorf("stdout lacks %q:\n%s", s, stdout.String())
				}
			}
			for _, s := range tt.stderr {
				if !strings.Contains(stderr.String(), s) {
					t.Errorf("stderr lacks %q:\n%s", s, stderr.String())
				}
			}
			if tt.noStdout && stdout.Len() > 0 {
				t.Errorf("unexpected stdout:\n%s", stdout.String())
			}
		})
	}
}

// TestHelpIsComplete checks that each command's --help documents every flag it accepts,
// the environment variables and the exit codes.
func TestHelpIsComplete(t *testing.T) {
	tests := []struct {
		cmd  string
		want []string
	}{
		{"run", []string{"--key", "--ttl", "--wait", "forever", "--conflict-exit-code", "--max-duration", "--node-timeout", "--kill-grace", "--durable-release",
			"-c, --config", "--endpoints", "--username", "--password", "--tls", "--max-lock-ttl", "--log-level",
			"LOCKAGENT_ENDPOINTS", "LOCKAGENT_USERNAME", "LOCKAGENT_PASSWORD", "LOCKAGENT_TLS", "LOCKAGENT_MAX_LOCK_TTL", "LOCKAGENT_LOG_LEVEL",
			"LOCKAGENT_KEY", "LOCKAGENT_FENCE", "LOCKAGENT_DEADLINE", "LOCKAGENT_TTL", "prefer the environment",
			"Exit codes", "64", "69", "70", "75", "77", "124", "126", "127", "128+S", "SIGINT, SIGTERM and SIGHUP"}},
		{"bench", []string{"--spawn", "--implementations", "--iterations", "--rounds", "--duration", "--goroutines", "--contenders",
			"--hold", "--ttl", "--processes", "cross-process", "CLOCK_MONOTONIC", "in-process", "--cpuprofile", "--memprofile", "lockagent-nofence", "lockagent-durable", "-c, --config", "--endpoints", "LOCKAGENT_PASSWORD", "DEFAULT retry settings",
			"Exit codes", "130"}},
	}
	for _, tt := range tests {
		t.Run(tt.cmd, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			if code := lockagent(context.Background(), []string{tt.cmd, "--help"}, &stdout, &stderr); code != 0 {
				t.Fatalf("%s --help exited %d", tt.cmd, code)
			}
			help := stdout.String()
			if stderr.Len() > 0 {
				t.Errorf("%s --help wrote on stderr: %s", tt.cmd, stderr.String())
			}
			for _, s := range tt.want {
				if !strings.Contains(help, s) {
					t.Errorf("%s --help lacks %q", tt.cmd, s)
				}
			}
			// Every registered flag is documented.
			var fs *flag.FlagSet
			if tt.cmd == "run" {
				fs, _, _ = newRunFlags()
			} else {
				fs, _, _ = newBenchFlags()
			}
			fs.VisitAll(func(f *flag.Flag) {
				if !strings.Contains(help, "--"+f.Name+" ") && !strings.Contains(help, "-"+f.Name+",") {
					t.Errorf("%s --help does not document flag --%s", tt.cmd, f.Name)
				}
			})
		})
	}
}
