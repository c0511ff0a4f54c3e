package test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/random"
	"github.com/gruntwork-io/terratest/modules/retry"
	"github.com/gruntwork-io/terratest/modules/terraform"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

// deployment is one applied copy of examples/local-five, with everything a test needs to
// break it and to prove it is gone afterwards.
type deployment struct {
	opts      *terraform.Options
	dataRoot  string
	endpoints []string
	// Outputs read after apply.
	restartDelay time.Duration
	maxLockTTL   time.Duration
	agentConfig  string // path of agent.json (0600)
	lockUser     string
	lockPassword string
	adminPass    string
}

// copyTree copies the module and the example into a temp dir with the same relative
// layout, so several tests can init and apply side by side without sharing .terraform or
// state.
func copyTree(t *testing.T, dirs ...string) string {
	t.Helper()
	dst := t.TempDir()
	for _, d := range dirs {
		src := filepath.Join(repoRoot, d)
		err := filepath.Walk(src, func(p string, info os.FileInfo, err error) error {
			if err != nil {
				return err
			}
			rel, _ := filepath.Rel(src, p)
			if info.IsDir() {
				if strings.HasPrefix(info.Name(), ".") && p != src { // .terraform, .redlock-data
					return filepath.SkipDir
				}
				return os.MkdirAll(filepath.Join(dst, d, rel), 0o755)
			}
			if !strings.HasSuffix(p, ".tf") {
				return nil
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dst, d, rel), b, 0o644)
		})
		if err != nil {
			t.Fatalf("copy %s: %v", d, err)
		}
	}
	return dst
}

// uniqueLoopback returns five loopback addresses no other test (in this process or another)
// uses until t ends, and one port free on all of them: the masters restart on their ports,
// which must stay free meanwhile (localmasters.ClaimLoopback).
func uniqueLoopback(t *testing.T) ([]string, int) {
	t.Helper()
	addrs := make([]string, 5)
	for i := range addrs {
		addrs[i] = redistest.Loopback(t)
	}
	for attempt := 0; attempt < 20; attempt++ {
		port := random.Random(20000, 60000)
		free := true
		for _, a := range addrs {
			if !portFree(a, port) {
				free = false
			}
		}
		if free {
			return addrs, port
		}
	}
	t.Fatal("no port free on all five claimed loopback addresses")
	return nil, 0
}

func portFree(host string, port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// terraformOptions points terraform at the offline provider mirror.
func terraformOptions(dir string, vars map[string]interface{}) *terraform.Options {
	return &terraform.Options{
		TerraformDir: dir,
		Vars:         vars,
		NoColor:      true,
		EnvVars: map[string]string{
			"TF_CLI_CONFIG_FILE": cliConfig,
			"TF_IN_AUTOMATION":   "1",
		},
	}
}

// deployLocalFive applies a private copy of examples/local-five with short lock TTLs and
// registers its destruction, plus a check that nothing it started is left running.
func deployLocalFive(t *testing.T, maxLockTTL string) *deployment {
	t.Helper()
	return deployLocalFiveVars(t, maxLockTTL, nil)
}

// deployLocalFiveVars is deployLocalFive with more of the example's variables set.
func deployLocalFiveVars(t *testing.T, maxLockTTL string, extra map[string]interface{}) *deployment {
	t.Helper()
	root := copyTree(t, "modules/redlock-cluster", "examples/local-five")
	addrs, port := uniqueLoopback(t)
	d := &deployment{dataRoot: filepath.Join(t.TempDir(), "data")}
	d.opts = terraformOptions(filepath.Join(root, "examples/local-five"), map[string]interface{}{
		"name_prefix":    strings.ToLower("e2e-" + random.UniqueId()),
		"bind_addresses": addrs,
		"ports":          []int{port, port, port, port, port},
		"data_root":      d.dataRoot,
		"max_lock_ttl":   maxLockTTL,
	})
	for k, v := range extra {
		d.opts.Vars[k] = v
	}
	t.Cleanup(func() { destroyAndVerify(t, d) })
	terraform.InitAndApply(t, d.opts)
	d.readOutputs(t)
	return d
}

func (d *deployment) readOutputs(t *testing.T) {
	t.Helper()
	d.endpoints = terraform.OutputList(t, d.opts, "endpoints")
	ms, err := strconv.Atoi(terraform.Output(t, d.opts, "restart_delay_ms"))
	if err != nil {
		t.Fatalf("restart_delay_ms: %v", err)
	}
	d.restartDelay = time.Duration(ms) * time.Millisecond
	ms, err = strconv.Atoi(terraform.Output(t, d.opts, "max_lock_ttl_ms"))
	if err != nil {
		t.Fatalf("max_lock_ttl_ms: %v", err)
	}
	d.maxLockTTL = time.Duration(ms) * time.Millisecond
	// Null (no single lock user) with lock_users.
	d.lockUser, _ = terraform.OutputE(t, d.opts, "lock_user")
	d.lockPassword, _ = secretOutputE(t, d.opts, "lock_password")
	d.adminPass = secretOutput(t, d.opts, "admin_password")
	d.agentConfig = filepath.Join(t.TempDir(), "agent.json")
	if err := os.WriteFile(d.agentConfig, []byte(secretOutput(t, d.opts, "agent_config")), 0o600); err != nil {
		t.Fatal(err)
	}
}

// supervisorState is the part of <data_dir>/supervisor.state the tests read.
type supervisorState struct {
	SupervisorPID int       `json:"supervisor_pid"`
	RedisPID      int       `json:"redis_pid"`
	Status        string    `json:"status"`
	LastAlive     time.Time `json:"last_alive"`
	RestartAt     time.Time `json:"restart_at"`
}

func (d *deployment) dataDirs(t *testing.T) []string {
	t.Helper()
	return terraform.OutputList(t, d.opts, "data_dirs")
}

// state reads master i's supervisor state: the live pids (outputs go stale after a restart).
func (d *deployment) state(t *testing.T, i int) supervisorState {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(d.dataDirs(t)[i], "supervisor.state"))
	if err != nil {
		t.Fatalf("supervisor state of master %d: %v", i, err)
	}
	var s supervisorState
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("supervisor state of master %d: %v", i, err)
	}
	return s
}

// waitHolding waits until master i's supervisor reports it holds the crashed master down.
func (d *deployment) waitHolding(t *testing.T, i int) supervisorState {
	t.Helper()
	var st supervisorState
	retry.DoWithRetry(t, fmt.Sprintf("master %d holding", i), 200, 50*time.Millisecond, func() (string, error) {
		if st = d.state(t, i); st.Status != "holding" {
			return "", fmt.Errorf("status %q", st.Status)
		}
		return st.Status, nil
	})
	return st
}

func (d *deployment) admin(t *testing.T, i int) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: d.endpoints[i], Password: d.adminPass,
		DialTimeout: 500 * time.Millisecond, ReadTimeout: time.Second, ContextTimeoutEnabled: true, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (d *deployment) lockClients(t *testing.T) []redis.UniversalClient {
	t.Helper()
	clients := make([]redis.UniversalClient, len(d.endpoints))
	for i, e := range d.endpoints {
		c := redis.NewClient(&redis.Options{Addr: e, Username: d.lockUser, Password: d.lockPassword,
			DialTimeout: 200 * time.Millisecond, ContextTimeoutEnabled: true, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		clients[i] = c
	}
	return clients
}

// validate runs the real `lockagent validate` binary against the deployment: the CLI
// stays covered end to end (its exit code, its report).
func (d *deployment) validate(t *testing.T) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, lockagentBin, "validate", "-c", d.agentConfig).CombinedOutput()
	return string(out), err
}

// validateSafe validates the deployment with the validation library, as a platform
// team's own terratest does: it fails the test unless the verdict is SAFE, logging the
// progress and the report.
func (d *deployment) validateSafe(t *testing.T) *validation.Report {
	t.Helper()
	cfg, err := validation.ConfigFromTerraform(t.Context(), d.opts.TerraformDir, "agent_config")
	if err != nil {
		t.Fatal(err)
	}
	return validation.Validate(t, cfg)
}

// destroyAndVerify destroys the deployment and proves nothing it started survives: no
// process (found by pid in the supervisors' state files), ports free, data dirs gone. A
// process that survives destroy is killed by its pid so the machine stays clean, and the
// test fails.
func destroyAndVerify(t *testing.T, d *deployment) {
	pids := d.pidsOnDisk()
	if _, err := terraform.DestroyE(t, d.opts); err != nil {
		t.Errorf("terraform destroy: %v", err)
	}
	for _, pid := range pids {
		if processOf(pid, d.dataRoot) {
			t.Errorf("pid %d (%s) still running after destroy; killing it", pid, cmdline(pid))
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	for _, e := range d.endpoints {
		host, port, _ := net.SplitHostPort(e)
		p, _ := strconv.Atoi(port)
		if !portFree(host, p) {
			t.Errorf("%s still in use after destroy", e)
		}
	}
	if entries, err := os.ReadDir(d.dataRoot); err == nil && len(entries) > 0 {
		t.Errorf("data left after destroy in %s: %d entries", d.dataRoot, len(entries))
	}
}

// pidsOnDisk lists every supervisor and redis pid recorded under the data root.
func (d *deployment) pidsOnDisk() []int {
	var pids []int
	states, _ := filepath.Glob(filepath.Join(d.dataRoot, "*", "supervisor.state"))
	for _, p := range states {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var s supervisorState
		if json.Unmarshal(b, &s) == nil {
			pids = append(pids, s.SupervisorPID, s.RedisPID)
		}
	}
	return pids
}

// processOf reports whether pid is alive and belongs to this deployment (its command line
// names the data root), so a recycled pid is never signalled.
func processOf(pid int, dataRoot string) bool {
	if pid <= 0 {
		return false
	}
	c := cmdline(pid)
	if c == "" {
		return false
	}
	if strings.Contains(c, dataRoot) {
		return true
	}
	// redis-server rewrites its title to "redis-server host:port"; match its cwd instead.
	cwd, err := os.Readlink(fmt.Sprintf("/proc/%d/cwd", pid))
	return err == nil && strings.HasPrefix(cwd, dataRoot)
}

func cmdline(pid int) string {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
}

// refuses reports whether nothing accepts connections on addr right now.
func refuses(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return true
	}
	_ = c.Close()
	return false
}

var errStillRefusing = errors.New("still refusing connections")
