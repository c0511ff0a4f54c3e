package hostconfig

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// policy runs the embedded restart-policy script outside systemd: a temp data dir, a
// settings file rendered like the host's, and a boot id the test controls. The clock is the
// machine's own CLOCK_BOOTTIME, as on a host.
type policy struct {
	t                        *testing.T
	dir, dataDir, bootIDFile string
	delay                    time.Duration
	hookLog                  string
	// uptimeFile stands for /proc/uptime once setClock wrote it (else the machine's own);
	// the master's address is host:port, where nothing answers unless a test starts a
	// server there (serverLog is that server's log). host is the test's own loopback
	// address: servers restart on port, and nothing of another test may take it meanwhile.
	uptimeFile, machineIDFile, serverLog string
	host                                 string
	port                                 int
}

// appendConf appends lines to the test's master.conf (later assignments win).
func (p *policy) appendConf(lines string) {
	p.t.Helper()
	f, err := os.OpenFile(filepath.Join(p.dir, "master.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		p.t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteString(lines); err != nil {
		p.t.Fatal(err)
	}
}

func newPolicy(t *testing.T, delay time.Duration) *policy {
	t.Helper()
	p := &policy{t: t, dir: t.TempDir(), delay: delay}
	p.dataDir = filepath.Join(p.dir, "data")
	p.bootIDFile = filepath.Join(p.dir, "boot_id")
	p.hookLog = filepath.Join(p.dir, "hooks.log")
	if err := os.MkdirAll(p.dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	p.setBoot("boot-1")
	// The AOF a master leaves (a clean marker vouches for it): a manifest and its empty base,
	// which a redis-server the scenario starts on this dir loads.
	if err := os.MkdirAll(filepath.Join(p.dataDir, "appendonlydir"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dataDir, "appendonlydir", "appendonly.aof.1.base.aof"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dataDir, "appendonlydir", "appendonly.aof.manifest"), []byte("file appendonly.aof.1.base.aof seq 1 type b\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p.uptimeFile = filepath.Join(p.dir, "uptime")
	p.machineIDFile = filepath.Join(p.dir, "machine-id")
	p.serverLog = filepath.Join(p.dir, "redis.log")
	if err := os.WriteFile(p.machineIDFile, []byte(testMachineID+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p.host = redistest.Loopback(t)
	port, err := redistest.FreePort(p.host)
	if err != nil {
		t.Fatal(err)
	}
	p.port = port
	adminPasswordFile := filepath.Join(p.dir, "admin-password")
	if err := os.WriteFile(adminPasswordFile, []byte(redistest.AdminPassword), 0o600); err != nil {
		t.Fatal(err)
	}
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		t.Fatal("redis-cli not on PATH")
	}
	record := []string{"/bin/sh", "-c", `env | grep ^REDLOCK_ | sort >> "$0"; echo -- >> "$0"`, p.hookLog}
	spec := master.Spec{Name: "m1", Bind: "10.0.0.11", Port: 6379, DataDir: p.dataDir, RestartDelay: delay,
		Hooks: master.Hooks{OnCrash: record, BeforeRestart: record, AfterRestart: record}}
	conf := masterConf(spec, Servers["redis-server"], "/nonexistent", "", "", false)
	// Pointed at the test's address, CLI, password and server log (later assignments win).
	conf += fmt.Sprintf("HOST=%[1]s\nPORT=%[2]d\nADDR=%[1]s:%[2]d\nCLI=%[3]s\nADMIN_PASSWORD_FILE=%[4]s\nSERVER_LOG_FILE=%[5]s\n",
		p.host, port, shellQuote(cli), shellQuote(adminPasswordFile), shellQuote(p.serverLog))
	if err := os.WriteFile(filepath.Join(p.dir, "master.conf"), []byte(conf), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, "redlock-master"), []byte(hostScript), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func (p *policy) setBoot(id string) {
	if err := os.WriteFile(p.bootIDFile, []byte(id+"\n"), 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// run runs one step with extra environment and returns its log and how long it took.
func (p *policy) run(step string, env ...string) (string, time.Duration) {
	p.t.Helper()
	cmd := p.command(step, env...)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	if err != nil {
		p.t.Fatalf("redlock-master %s: %v\n%s", step, err, out)
	}
	return string(out), time.Since(start)
}

// command is one step of the script with the test's files in place of the host's.
func (p *policy) command(step string, env ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(p.dir, "redlock-master"), step)
	cmd.Env = append(os.Environ(), "REDLOCK_MASTER_CONF="+filepath.Join(p.dir, "master.conf"),
		"REDLOCK_BOOT_ID_FILE="+p.bootIDFile, "REDLOCK_RUN_DIR="+filepath.Join(p.dir, "run"),
		"REDLOCK_MACHINE_ID_FILE="+p.machineIDFile)
	if _, err := os.Stat(p.uptimeFile); err == nil {
		cmd.Env = append(cmd.Env, "REDLOCK_UPTIME_FILE="+p.uptimeFile)
	}
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

func (p *policy) exists(name string) bool {
	_, err := os.Stat(filepath.Join(p.dataDir, name))
	return err == nil
}

func (p *policy) write(name, content string) {
	if err := os.WriteFile(filepath.Join(p.dataDir, name), []byte(content), 0o600); err != nil {
		p.t.Fatal(err)
	}
}

func (p *policy) read(name string) string {
	b, _ := os.ReadFile(filepath.Join(p.dataDir, name))
	return string(b)
}

func bootMS(t *testing.T) int64 {
	b, err := os.ReadFile("/proc/uptime")
	if err != nil {
		t.Fatal(err)
	}
	secs, err := strconv.ParseFloat(strings.Fields(string(b))[0], 64)
	if err != nil {
		t.Fatal(err)
	}
	return int64(secs * 1000)
}

// heldFor is the hold the gate announced, 0 when it started at once.
func heldFor(t *testing.T, log string) time.Duration {
	t.Helper()
	if strings.Contains(log, "starting at once") {
		return 0
	}
	i := strings.Index(log, "holding the start for ")
	if i < 0 {
		t.Fatalf("gate neither started at once nor held:\n%s", log)
	}
	var ms int64
	fmt.Sscanf(log[i+len("holding the start for "):], "%dms", &ms)
	return time.Duration(ms) * time.Millisecond
}

func TestGate(t *testing.T) {
	const delay = 400 * time.Millisecond
	for _, tc := range []struct {
		name    string
		prepare func(p *policy)
		full    bool // hold the whole delay from now
		none    bool // start at once
	}{
		{name: "clean stop starts at once", none: true,
			prepare: func(p *policy) { p.write("redlock.clean-stop", p.cleanMarker()) }},
		{name: "new host with no record holds", full: true, prepare: func(p *policy) {}},
		{name: "crash record of another boot holds from now", full: true, prepare: func(p *policy) {
			p.write("redlock.hold", fmt.Sprintf("boot-0 %d\n", bootMS(t)-10_000))
		}},
		{name: "unreadable record holds from now", full: true,
			prepare: func(p *policy) { p.write("redlock.hold", "garbage\n") }},
		{name: "interrupted hold beats a clean marker", full: true, prepare: func(p *policy) {
			p.write("redlock.clean-stop", p.cleanMarker())
			p.write("redlock.hold", "boot-0 1\n")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newPolicy(t, delay)
			tc.prepare(p)
			log, took := p.run("gate")
			held := heldFor(t, log)
			switch {
			case tc.none && held != 0:
				t.Fatalf("held %s after a clean stop:\n%s", held, log)
			case tc.full && held < delay-20*time.Millisecond:
				t.Fatalf("held %s, want restart_delay %s from now:\n%s", held, delay, log)
			case tc.full && took < held:
				t.Fatalf("gate returned after %s, before its announced hold %s", took, held)
			}
			if p.exists("redlock.hold") || p.exists("redlock.clean-stop") {
				t.Fatalf("records left after the gate opened: hold %q clean %q", p.read("redlock.hold"), p.read("redlock.clean-stop"))
			}
		})
	}

	// The clock is the test's (the uptime file): the gate cannot find the hold over before
	// it looked, however loaded the machine, and opens once the clock reaches the record.
	t.Run("crash record of this boot holds until exit plus delay", func(t *testing.T) {
		p := newPolicy(t, 10*time.Second)
		const now, until = 5_000_000, 5_000_300
		p.setClock(now)
		p.write("redlock.hold", fmt.Sprintf("boot-1 %d\n", until))
		g := p.startGate()
		if !g.waitFor("holding the start for 300ms") {
			t.Fatalf("gate did not hold the rest of the recorded hold (300ms), nor a new restart_delay:\n%s", g.output())
		}
		p.setClock(until)
		if err := g.wait(); err != nil {
			t.Fatalf("gate after the recorded hold: %v", err)
		}
		hooks, _ := os.ReadFile(p.hookLog)
		if !strings.Contains(string(hooks), "REDLOCK_EVENT=before_restart") || !strings.Contains(string(hooks), "REDLOCK_RESTART_AT=20") {
			t.Errorf("before_restart hook did not run with its environment:\n%s", hooks)
		}
		p.run("started", "MAINPID=4242")
		hooks, _ = os.ReadFile(p.hookLog)
		if !strings.Contains(string(hooks), "REDLOCK_EVENT=after_restart") || !strings.Contains(string(hooks), "REDLOCK_REDIS_PID=4242") {
			t.Errorf("after_restart hook did not run after the hold:\n%s", hooks)
		}
	})
}

// cleanMarker is the marker a clean stop on this machine, data dir and boot writes, with
// the token it puts in the server's pidfile.
func (p *policy) cleanMarker() string {
	return p.marker(testMachineID, "boot-1", bootMS(p.t), p.aofDigest(), p.dataDir)
}

// marker writes a token into the server's pidfile and the run dir's copy, as the stopped
// step does after a clean stop, and returns a clean marker naming it with the given fields.
func (p *policy) marker(machine, boot string, ms int64, digest, dir string) string {
	p.t.Helper()
	const token = "5e471ne15e471ne15e471ne15e471ne1"
	if err := os.WriteFile(p.pidFile(), []byte(token+"\n"), 0o644); err != nil {
		p.t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(p.dir, "run"), 0o700); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, "run", "token"), []byte(token+"\n"), 0o600); err != nil {
		p.t.Fatal(err)
	}
	return fmt.Sprintf("v4 %s %s %d %s %s %s\n", machine, boot, ms, digest, token, dir)
}

// pidFile is the server's pidfile: the rendered config's, in the data dir (Server.PIDFile),
// where the script looks for it.
func (p *policy) pidFile() string { return filepath.Join(p.dataDir, "redis-server.pid") }

func TestStopped(t *testing.T) {
	t.Run("clean exit records a clean stop", func(t *testing.T) {
		p := newPolicy(t, time.Second)
		p.run("started", "MAINPID=4242")
		// What the stop step records when it shut the server down with the AOF on and
		// appendfsync always (the scenario table runs it against a real server).
		if err := os.WriteFile(filepath.Join(p.dir, "run", "stop-proof"), []byte("4242 durable\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p.serverLog, []byte("4242:M 25 Nov 2026 22:41:22.013 * Calling fsync() on the AOF file.\n"+
			"4242:M 25 Nov 2026 22:41:22.015 # Redis is now ready to exit, bye bye...\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p.run("stopped", "SERVICE_RESULT=success", "EXIT_CODE=exited", "EXIT_STATUS=0")
		if !p.exists("redlock.clean-stop") || p.exists("redlock.hold") {
			t.Fatalf("clean %v hold %v", p.exists("redlock.clean-stop"), p.exists("redlock.hold"))
		}
		if log, _ := p.run("gate"); heldFor(t, log) != 0 {
			t.Fatalf("gate held after a clean stop:\n%s", log)
		}
	})
	t.Run("a proof without ready to exit in the server log is not clean", func(t *testing.T) {
		p := newPolicy(t, time.Second)
		p.run("started", "MAINPID=4242")
		if err := os.WriteFile(filepath.Join(p.dir, "run", "stop-proof"), []byte("4242 durable\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p.serverLog, []byte("4242:M 25 Nov 2026 22:41:22.013 # User requested shutdown...\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p.run("stopped", "SERVICE_RESULT=success", "EXIT_CODE=exited", "EXIT_STATUS=0")
		if p.exists("redlock.clean-stop") || !p.exists("redlock.hold") {
			t.Fatalf("clean %v hold %v: want a hold", p.exists("redlock.clean-stop"), p.exists("redlock.hold"))
		}
	})
	t.Run("a proof without an AOF fsync at the exit in the server log is not clean", func(t *testing.T) {
		// The AOF was turned off after the stop step read it: nothing fsynced at the exit.
		p := newPolicy(t, time.Second)
		p.run("started", "MAINPID=4242")
		if err := os.WriteFile(filepath.Join(p.dir, "run", "stop-proof"), []byte("4242 durable\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p.serverLog, []byte("4242:M 25 Nov 2026 22:41:22.015 # Redis is now ready to exit, bye bye...\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		p.run("stopped", "SERVICE_RESULT=success", "EXIT_CODE=exited", "EXIT_STATUS=0")
		if p.exists("redlock.clean-stop") || !p.exists("redlock.hold") {
			t.Fatalf("clean %v hold %v: want a hold", p.exists("redlock.clean-stop"), p.exists("redlock.hold"))
		}
	})
	for _, env := range [][]string{
		{"SERVICE_RESULT=signal", "EXIT_CODE=killed", "EXIT_STATUS=KILL"},
		{"SERVICE_RESULT=exit-code", "EXIT_CODE=exited", "EXIT_STATUS=1"},
		{"SERVICE_RESULT=timeout", "EXIT_CODE=killed", "EXIT_STATUS=TERM"},
		{}, // run by hand, outside systemd
	} {
		t.Run("unclean "+strings.Join(env, " "), func(t *testing.T) {
			p := newPolicy(t, 5*time.Second)
			p.write("redlock.clean-stop", p.cleanMarker()) // from an earlier run
			p.run("started", "MAINPID=777")
			before := bootMS(t)
			p.run("stopped", env...)
			var boot string
			var until int64
			if _, err := fmt.Sscanf(p.read("redlock.hold"), "%s %d", &boot, &until); err != nil {
				t.Fatalf("hold record %q: %v", p.read("redlock.hold"), err)
			}
			if boot != "boot-1" || until < before+5000 || p.exists("redlock.clean-stop") {
				t.Fatalf("hold record %q (stopped at %d), clean marker %v", p.read("redlock.hold"), before, p.exists("redlock.clean-stop"))
			}
			hooks, _ := os.ReadFile(p.hookLog)
			for _, want := range []string{"REDLOCK_EVENT=crash", "REDLOCK_REDIS_PID=777", "REDLOCK_MASTER_ADDR=" + p.host + ":" + strconv.Itoa(p.port),
				"REDLOCK_MASTER_NAME=m1", "REDLOCK_RESTART_DELAY_MS=5000", "REDLOCK_DATA_DIR=" + p.dataDir} {
				if !strings.Contains(string(hooks), want) {
					t.Errorf("on_crash hook environment lacks %s:\n%s", want, hooks)
				}
			}
		})
	}
	t.Run("stop during the hold keeps the hold", func(t *testing.T) {
		p := newPolicy(t, time.Second)
		p.write("redlock.hold", "boot-1 123\n")
		p.run("stopped", "SERVICE_RESULT=success", "EXIT_CODE=exited", "EXIT_STATUS=0")
		if p.exists("redlock.clean-stop") || p.read("redlock.hold") != "boot-1 123\n" {
			t.Fatalf("clean %v hold %q", p.exists("redlock.clean-stop"), p.read("redlock.hold"))
		}
	})
}
