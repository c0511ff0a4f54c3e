package hostconfig

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// The host gate against the policy's scenario table (internal/master/hold), outside
// systemd: the data dir, boot id, machine id and CLOCK_BOOTTIME (the uptime file) are the
// test's. The clock stands still unless the test moves it, so every hold the gate announces
// is exact, and the gate opens when, and only when, the test moves the clock past it.
func TestHoldScenarios(t *testing.T) {
	const delayMS = 2_000
	for _, sc := range hold.Scenarios {
		if !sc.For(hold.Host) {
			continue
		}
		t.Run(sc.Name, func(t *testing.T) {
			t.Parallel()
			got := runHostScenario(t, sc, delayMS)
			t.Logf("RESULT %s | issue %d | want %s | got %s", sc.Name, sc.Issue, sc.Want, got)
			if got != string(sc.Want) {
				t.Errorf("scenario %q (issue %d): got %s, want %s", sc.Name, sc.Issue, got, sc.Want)
			}
		})
	}
}

// runHostScenario prepares the records, plays the exit, runs the gate and says what it did,
// in the table's words (or how it differed).
func runHostScenario(t *testing.T, sc hold.Scenario, delayMS int64) string {
	p := newPolicy(t, time.Duration(delayMS)*time.Millisecond)
	clock := int64(1_000_000)
	if sc.UptimeMS != 0 {
		clock = sc.UptimeMS
	}
	p.setClock(clock)
	digest := p.aofDigest() // of the AOF files a clean stop left
	if !sc.Ran || sc.Marker == hold.MarkerAOFGone {
		if err := os.RemoveAll(filepath.Join(p.dataDir, "appendonlydir")); err != nil {
			t.Fatal(err)
		}
	}
	switch sc.Marker {
	case hold.MarkerHere, hold.MarkerAOFGone:
		if sc.StartedByHand {
			// The marker and the pidfile's token of a real durable stop, then the server
			// run by hand with the master's config file.
			t.Logf("stopped:\n%s", p.cleanStop())
			p.runByHand(false, "--appendonly", "no")
			break
		}
		p.write(hold.HostCleanMarker, p.marker(testMachineID, "boot-1", clock-100, digest, p.dataDir))
	case hold.MarkerOtherBoot:
		p.write(hold.HostCleanMarker, p.marker(testMachineID, "boot-0", clock-100, digest, p.dataDir))
	case hold.MarkerOtherMachine:
		p.write(hold.HostCleanMarker, p.marker("0123456789abcdef0123456789abcdef", "boot-1", clock-100, digest, p.dataDir))
	case hold.MarkerOtherDir:
		p.write(hold.HostCleanMarker, p.marker(testMachineID, "boot-1", clock-100, digest, "/var/lib/other"))
	case hold.MarkerNoIdentity:
		p.write(hold.HostCleanMarker, "boot-1 1\n")
	case hold.MarkerAOFReplaced:
		p.write(hold.HostCleanMarker, p.marker(testMachineID, "boot-1", clock-100, digest, p.dataDir))
		p.replaceAOF()
	}
	switch sc.Hold {
	case hold.HoldThisBoot:
		p.write(hold.HostHoldRecord, fmt.Sprintf("boot-1 %d\n", clock+sc.HoldLeftMS))
	case hold.HoldOtherBoot:
		p.write(hold.HostHoldRecord, fmt.Sprintf("boot-0 %d\n", clock+10_000))
	case hold.HoldUnreadable:
		p.write(hold.HostHoldRecord, "garbage\n")
	case hold.HoldNotANumber:
		p.write(hold.HostHoldRecord, "boot-1 99999999999999999999\n")
	case hold.HoldFarAhead:
		p.write(hold.HostHoldRecord, fmt.Sprintf("boot-1 %d\n", clock+10*365*24*3600*1000))
	}
	if sc.RecordsStuck {
		p.makeStuck(hold.HostHoldRecord, hold.HostCleanMarker)
	}
	want := delayMS // the hold the gate must announce, for the holds counted from a moment
	if sc.LastRunDelayMS != 0 {
		// The last run started under the larger delay (a clean start), then the delay was
		// lowered in master.conf; the exit below ends that run.
		want = sc.LastRunDelayMS
		p.setDelay(sc.LastRunDelayMS)
		p.write(hold.HostCleanMarker, p.marker(testMachineID, "boot-1", clock-100, p.aofDigest(), p.dataDir))
		if log, err := p.try("gate"); err != nil || !strings.Contains(log, "starting at once") {
			t.Fatalf("the run under the larger delay did not start at once: %v\n%s", err, log)
		}
		p.setDelay(delayMS)
	}
	switch sc.Floor {
	case hold.FloorUnreadable:
		p.write(hold.HostFloorRecord, "boot-1 garbage\n")
	case hold.FloorFarAhead:
		p.write(hold.HostFloorRecord, fmt.Sprintf("boot-1 %d %d %d\n", clock+10*365*24*3600*1000, delayMS, delayMS))
	case hold.FloorWeekAhead:
		p.write(hold.HostFloorRecord, fmt.Sprintf("boot-1 %d %d %d\n", clock+7*24*3600*1000, delayMS, delayMS))
	case hold.FloorOverflow:
		p.write(hold.HostFloorRecord, "boot-1 9223372036854775807 9223372036854775807 9223372036854775807\n")
	case hold.FloorNegative:
		p.write(hold.HostFloorRecord, fmt.Sprintf("boot-1 -4999969000 %d %d\n", delayMS, delayMS))
	}
	if sc.DelayOnDisk != "" {
		p.setDelayText(sc.DelayOnDisk)
	}

	switch sc.Exit {
	case hold.ExitKilled:
		p.try("started", "MAINPID=4242") // with a delay on disk that is not a number, it fails
		p.try("stopped", "SERVICE_RESULT=signal", "EXIT_CODE=killed", "EXIT_STATUS=KILL")
	case hold.ExitAdminShutdownAOFOff:
		// The server exited 0 on its own (the stop step never ran): systemd reports success.
		p.run("started", "MAINPID=4242")
		p.try("stopped", "SERVICE_RESULT=success", "EXIT_CODE=exited", "EXIT_STATUS=0")
	case hold.ExitDurableStop, hold.ExitStopAOFOff, hold.ExitAOFOffAfterStopCheck:
		srv := p.startServer(p.dataDir)
		if sc.Exit == hold.ExitAOFOffAfterStopCheck {
			p.raceShutdown()
		}
		if sc.Exit == hold.ExitStopAOFOff {
			if err := srv.admin.ConfigSet(context.Background(), "appendonly", "no").Err(); err != nil {
				t.Fatal(err)
			}
		}
		pid := fmt.Sprint(srv.cmd.Process.Pid)
		p.run("started", "MAINPID="+pid)
		p.run("stop", "MAINPID="+pid)
		if err := srv.wait(); err != nil {
			t.Fatalf("the server did not exit 0 after the stop step: %v", err)
		}
		out, _ := p.try("stopped", "SERVICE_RESULT=success", "EXIT_CODE=exited", "EXIT_STATUS=0")
		t.Logf("stopped:\n%s", out)
	}

	if sc.Exit == hold.ExitReplaced || sc.Exit == hold.ExitFlushed {
		// The unit's server, started (its run recorded by the functions step), replicates
		// another server and serves on as a master (or its keyspace is flushed); the state
		// timer's step runs, then systemd's stopped step reports the kill.
		srv := p.startServer(p.dataDir)
		pid := strconv.Itoa(srv.cmd.Process.Pid)
		p.withFunctions()
		p.run("functions")
		p.run("started", "MAINPID="+pid)
		if sc.Exit == hold.ExitFlushed {
			if err := srv.admin.FlushAll(context.Background()).Err(); err != nil {
				t.Fatal(err)
			}
		} else {
			p.replicateAnother(srv)
		}
		out, _ := p.try("state")
		if !srv.exitedWithin(10 * time.Second) {
			return "the state step did not kill the server whose dataset was replaced:\n" + out
		}
		out, _ = p.try("stopped", "SERVICE_RESULT=signal", "EXIT_CODE=killed", "EXIT_STATUS=KILL")
		t.Logf("stopped:\n%s", out)
	}

	var srv *testServer
	if sc.ServerOnAddress {
		srv = p.startServer(t.TempDir()) // no record names it, nor is it in the data dir
		if sc.ServerPaused {
			if err := srv.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
				t.Fatal(err)
			}
		}
	}
	g := p.startGate()
	if srv != nil && sc.StopWhileWaiting {
		// systemd stops the unit while the gate waits; the server serves on for a minute,
		// then stops; then the master starts again: when the server stopped is unknown.
		if !g.waitFor("waiting until it stops") {
			return g.outcome(0)
		}
		_ = g.cmd.Process.Signal(syscall.SIGTERM)
		<-g.done
		out, err := p.try("stopped", "SERVICE_RESULT=signal", "EXIT_CODE=killed", "EXIT_STATUS=TERM")
		t.Logf("gate:\n%s\nstopped (%v):\n%s", g.output(), err, out)
		clock += 60_000
		p.setClock(clock)
		srv.kill()
		srv = nil
		g = p.startGate()
	}
	if srv != nil {
		if !g.waitFor("waiting until it stops") {
			return g.outcome(0)
		}
		srv.kill()
		clock += 5_000 // it was last seen here
		p.setClock(clock)
	}
	if !g.waitFor("holding the start for") {
		return refusalNamesFile(sc, g.outcome(0), g.output(), p.dir)
	}
	if sc.ServerDuringHold {
		// A server run by hand on the address while the gate holds, killed before the
		// hold ends: its locks count from when it was gone.
		srv := p.startServer(t.TempDir())
		if !g.waitForCount("waiting until it stops", 1) {
			srv.kill()
			p.setClock(clock + sc.HoldLeftMS)
			if err := g.wait(); err == nil {
				return "opened at the recorded time: the server that served during the hold was never seen"
			}
			return "never saw the server that served during the hold:\n" + g.output()
		}
		srv.kill()
		clock += 500 // it was last seen here
		p.setClock(clock)
		if !g.waitForCount("holding the start for", 2) {
			return "no hold announced after the server was gone:\n" + g.output()
		}
	}
	all := regexp.MustCompile(`holding the start for (\d+)ms`).FindAllStringSubmatch(g.output(), -1)
	announced, _ := strconv.ParseInt(all[len(all)-1][1], 10, 64)
	var expect int64
	switch sc.Want {
	case hold.HoldRecorded:
		expect = sc.HoldLeftMS
	case hold.HoldFromNow, hold.HoldFromExit, hold.HoldFromGone:
		expect = want
	}
	if announced != expect {
		g.stop()
		return fmt.Sprintf("hold for %dms (want %dms: %s)", announced, expect, sc.Want)
	}
	// The gate opens once the clock reaches the end of the hold, whatever the uptime.
	p.setClock(clock + announced)
	if err := g.wait(); err != nil {
		return fmt.Sprintf("held %dms, then failed: %v\n%s", announced, err, g.output())
	}
	if p.exists(hold.HostHoldRecord) || p.exists(hold.HostCleanMarker) {
		return fmt.Sprintf("held %dms, then opened leaving records behind", announced)
	}
	if sc.Want == hold.HoldRecorded {
		return string(hold.HoldRecorded)
	}
	return string(sc.Want)
}

// refusalNamesFile checks that a refusal over a value read from disk names the file it
// read (master.conf, or the floor record): the operator must know what to fix.
func refusalNamesFile(sc hold.Scenario, got, log, dir string) string {
	if got != string(hold.Refuse) {
		return got
	}
	file := ""
	switch {
	case sc.DelayOnDisk != "":
		file = filepath.Join(dir, "master.conf")
	case sc.Floor != hold.FloorAsWritten:
		file = hold.HostFloorRecord
	}
	if file != "" && !strings.Contains(log, file) {
		return fmt.Sprintf("refused without naming %s:\n%s", file, log)
	}
	return got
}

// aofDigest is what the script's aof_digest says of the data dir's AOF files now: sha256 of
// "name size mtime inode" lines, by name.
func (p *policy) aofDigest() string {
	p.t.Helper()
	dir := filepath.Join(p.dataDir, "appendonlydir")
	entries, _ := os.ReadDir(dir) // none: the script's digest of no files
	var b strings.Builder
	for _, e := range entries {
		fi, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			p.t.Fatal(err)
		}
		fmt.Fprintf(&b, "%s %d %d %d\n", e.Name(), fi.Size(), fi.ModTime().Unix(), fi.Sys().(*syscall.Stat_t).Ino)
	}
	return fmt.Sprintf("%x", sha256.Sum256([]byte(b.String())))
}

// replaceAOF puts an older AOF in place of the one a clean stop left (a restored backup).
func (p *policy) replaceAOF() {
	p.t.Helper()
	path := filepath.Join(p.dataDir, "appendonlydir", "appendonly.aof.1.base.aof")
	if err := os.Remove(path); err != nil {
		p.t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n"), 0o600); err != nil {
		p.t.Fatal(err)
	}
}

const testMachineID = "5a7c0de5a7c0de5a7c0de5a7c0de5a7c"

// setClock sets the host's CLOCK_BOOTTIME the script reads, in /proc/uptime's format.
func (p *policy) setClock(ms int64) {
	p.t.Helper()
	tmp := p.uptimeFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(fmt.Sprintf("%d.%02d 1.00\n", ms/1000, ms%1000/10)), 0o644); err != nil {
		p.t.Fatal(err)
	}
	if err := os.Rename(tmp, p.uptimeFile); err != nil {
		p.t.Fatal(err)
	}
}

// setDelay rewrites RESTART_DELAY_MS in master.conf, as a new rendering would.
func (p *policy) setDelay(ms int64) {
	p.t.Helper()
	path := filepath.Join(p.dir, "master.conf")
	conf, err := os.ReadFile(path)
	if err != nil {
		p.t.Fatal(err)
	}
	out := regexp.MustCompile(`(?m)^RESTART_DELAY_MS=.*$`).ReplaceAll(conf, []byte(fmt.Sprintf("RESTART_DELAY_MS='%d'", ms)))
	if err := os.WriteFile(path, out, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// setDelayText writes RESTART_DELAY_MS as a hand edit would, unquoted text as given.
func (p *policy) setDelayText(text string) {
	p.t.Helper()
	path := filepath.Join(p.dir, "master.conf")
	conf, err := os.ReadFile(path)
	if err != nil {
		p.t.Fatal(err)
	}
	out := regexp.MustCompile(`(?m)^RESTART_DELAY_MS=.*$`).ReplaceAll(conf, []byte("RESTART_DELAY_MS="+text))
	if err := os.WriteFile(path, out, 0o644); err != nil {
		p.t.Fatal(err)
	}
}

// raceShutdown points the script's CLI at a wrapper that plays an admin racing the stop
// step: right before the step's SHUTDOWN, the write pause runs out, the AOF is turned off
// and a write is acknowledged (it is in memory only).
func (p *policy) raceShutdown() {
	p.t.Helper()
	cli, err := exec.LookPath("redis-cli")
	if err != nil {
		p.t.Fatal("redis-cli not on PATH")
	}
	admin := fmt.Sprintf("REDISCLI_AUTH=%s %s -h %s -p %d --no-auth-warning", redistest.AdminPassword, shellQuote(cli), p.host, p.port)
	wrapper := filepath.Join(p.dir, "racing-cli")
	body := "#!/bin/sh\nfor a; do last=$a; done\nif [ \"$last\" = SHUTDOWN ]; then\n" +
		"\t" + admin + " CLIENT UNPAUSE >/dev/null\n" +
		"\t" + admin + " CONFIG SET appendonly no >/dev/null\n" +
		"\t" + admin + " SET acknowledged-after-the-check 1 >/dev/null\n" +
		"fi\nexec " + shellQuote(cli) + " \"$@\"\n"
	if err := os.WriteFile(wrapper, []byte(body), 0o755); err != nil {
		p.t.Fatal(err)
	}
	p.appendConf("CLI=" + shellQuote(wrapper) + "\n")
}

// makeStuck makes the named records (those that exist) impossible to remove or replace, as
// an I/O error or a read-only file would (root only: chattr +i).
func (p *policy) makeStuck(names ...string) {
	p.t.Helper()
	for _, name := range names {
		path := filepath.Join(p.dataDir, name)
		if _, err := os.Stat(path); err != nil {
			continue
		}
		if out, err := exec.Command("chattr", "+i", path).CombinedOutput(); err != nil {
			p.t.Skipf("cannot make %s immutable (needs root on ext4/xfs): %v %s", name, err, out)
		}
		p.t.Cleanup(func() { _ = exec.Command("chattr", "-i", path).Run() })
	}
}

// try runs a step and returns its log and error (a step may fail on purpose).
func (p *policy) try(step string, env ...string) (string, error) {
	cmd := p.command(step, env...)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// gateRun is a gate running in the background.
type gateRun struct {
	t    *testing.T
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

func (g *gateRun) Write(b []byte) (int, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.out.Write(b)
}

func (g *gateRun) output() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.out.String()
}

func (p *policy) startGate() *gateRun {
	g := &gateRun{t: p.t, cmd: p.command("gate"), done: make(chan struct{})}
	g.cmd.Stdout, g.cmd.Stderr = g, g
	if err := g.cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	go func() { g.err = g.cmd.Wait(); close(g.done) }()
	p.t.Cleanup(g.stop)
	return g
}

// waitFor reports whether the gate logged what before it exited.
func (g *gateRun) waitFor(what string) bool {
	deadline := time.After(30 * time.Second)
	for !strings.Contains(g.output(), what) {
		select {
		case <-g.done:
			return strings.Contains(g.output(), what)
		case <-deadline:
			g.t.Fatalf("gate neither logged %q nor exited:\n%s", what, g.output())
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

// waitForCount reports whether the gate logged what n times before it exited; false also
// when it did neither in 30s (the caller names what the gate failed to do).
func (g *gateRun) waitForCount(what string, n int) bool {
	deadline := time.After(30 * time.Second)
	for strings.Count(g.output(), what) < n {
		select {
		case <-g.done:
			return strings.Count(g.output(), what) >= n
		case <-deadline:
			return false
		case <-time.After(10 * time.Millisecond):
		}
	}
	return true
}

func (g *gateRun) wait() error {
	select {
	case <-g.done:
		return g.err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("still holding after the clock passed the end of the hold:\n%s", g.output())
	}
}

func (g *gateRun) stop() {
	select {
	case <-g.done:
	default:
		_ = g.cmd.Process.Kill()
		<-g.done
	}
}

// outcome names what a gate that exited without holding did.
func (g *gateRun) outcome(int64) string {
	if err := g.wait(); err != nil {
		g.t.Logf("gate failed: %v\n%s", err, g.output())
		return string(hold.Refuse)
	}
	if strings.Contains(g.output(), "hold over: starting") {
		return string(hold.HoldRecorded) // over already: it starts without a wait
	}
	return string(hold.StartNow)
}

// testServer is a real redis-server the scenario starts on the master's address.
type testServer struct {
	t     *testing.T
	cmd   *exec.Cmd
	admin *redis.Client
	done  chan error
}

func (p *policy) startServer(dir string) *testServer { return p.startServerOn(dir, p.port) }

func (p *policy) startServerOn(dir string, port int) *testServer {
	p.t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		p.t.Fatal("redis-server not on PATH")
	}
	return p.startCmd(exec.Command(bin, "--bind", p.host, "--port", strconv.Itoa(port), "--dir", dir,
		"--requirepass", redistest.AdminPassword, "--appendonly", "yes", "--appendfsync", "always",
		"--save", "", "--logfile", p.serverLog), port)
}

// startCmd starts the redis-server cmd runs, which serves on port of the test's address, and
// waits until it answers. It is killed at cleanup.
func (p *policy) startCmd(cmd *exec.Cmd, port int) *testServer {
	p.t.Helper()
	if err := cmd.Start(); err != nil {
		p.t.Fatal(err)
	}
	s := &testServer{t: p.t, cmd: cmd, done: make(chan error, 1)}
	go func() { s.done <- cmd.Wait() }()
	p.t.Cleanup(s.kill)
	s.admin = redis.NewClient(&redis.Options{Addr: net.JoinHostPort(p.host, strconv.Itoa(port)), Password: redistest.AdminPassword})
	p.t.Cleanup(func() { s.admin.Close() })
	deadline := time.Now().Add(30 * time.Second)
	for s.admin.Ping(context.Background()).Err() != nil {
		if time.Now().After(deadline) {
			p.t.Fatal("the test's redis-server does not answer")
		}
		time.Sleep(20 * time.Millisecond)
	}
	return s
}

func (s *testServer) wait() error {
	select {
	case err := <-s.done:
		s.done <- err
		return err
	case <-time.After(30 * time.Second):
		return fmt.Errorf("redis-server did not exit")
	}
}

func (s *testServer) kill() {
	_ = s.cmd.Process.Signal(syscall.SIGKILL) // an error once it is gone: nothing to do
	_ = s.wait()
}

// TestGateWaitsForAServerInTheDataDir: a redis-server running from the master's data dir,
// on another port and named by no record, is found (by its dir and binary), waited out, and
// held for from when it was gone.
func TestGateWaitsForAServerInTheDataDir(t *testing.T) {
	p := newPolicy(t, 2*time.Second)
	const clock = 7_000_000
	p.setClock(clock)
	p.write(hold.HostCleanMarker, p.cleanMarker())
	other, err := redistest.FreePort(p.host)
	if err != nil {
		t.Fatal(err)
	}
	srv := p.startServerOn(p.dataDir, other)
	g := p.startGate()
	if !g.waitFor("waiting until it stops") {
		t.Fatalf("the gate did not find the server in the data dir:\n%s", g.output())
	}
	if !strings.Contains(g.output(), "in "+p.dataDir) {
		t.Fatalf("found, but not by its dir:\n%s", g.output())
	}
	srv.kill()
	p.setClock(clock + 5_000)
	if !g.waitFor("holding the start for 2000ms") {
		t.Fatalf("no hold of restart_delay from when the server was gone:\n%s", g.output())
	}
	p.setClock(clock + 7_000)
	if err := g.wait(); err != nil {
		t.Fatal(err)
	}
}
