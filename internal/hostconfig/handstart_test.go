package hostconfig

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// serverConfig writes the master's server config as the test has it: the master's address,
// data dir, AOF settings, log file and pidfile (Server.PIDFile's place in the data dir), and
// returns its path. A server started with it writes its pid into the pidfile at its start.
func (p *policy) serverConfig() string {
	p.t.Helper()
	path := filepath.Join(p.dir, "redis-server.conf")
	conf := fmt.Sprintf("bind %s\nport %d\ndir %q\nrequirepass %s\nappendonly yes\nappendfsync always\nsave \"\"\nlogfile %q\npidfile %q\n",
		p.host, p.port, p.dataDir, redistest.AdminPassword, p.serverLog, p.pidFile())
	if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
		p.t.Fatal(err)
	}
	return path
}

// startServerConfig starts redis-server with the master's config file (serverConfig) and
// args after it (the command line overrides the file), as the unit or an operator does.
func (p *policy) startServerConfig(args ...string) *testServer {
	p.t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		p.t.Fatal("redis-server not on PATH")
	}
	return p.startCmd(exec.Command(bin, append([]string{p.serverConfig()}, args...)...), p.port)
}

// cleanStop runs a server the way the unit does and stops it through the stop and stopped
// steps with the AOF on and appendfsync always: the clean marker and the pidfile's token are
// the script's own. It returns the stopped step's log.
func (p *policy) cleanStop() string {
	p.t.Helper()
	srv := p.startServerConfig()
	pid := strconv.Itoa(srv.cmd.Process.Pid)
	p.run("started", "MAINPID="+pid)
	p.run("stop", "MAINPID="+pid)
	if err := srv.wait(); err != nil {
		p.t.Fatalf("the server did not exit 0 after the stop step: %v", err)
	}
	out, err := p.try("stopped", "SERVICE_RESULT=success", "EXIT_CODE=exited", "EXIT_STATUS=0")
	if err != nil || !p.exists(hold.HostCleanMarker) {
		p.t.Fatalf("no clean marker after a durable stop (%v):\n%s", err, out)
	}
	return out
}

// runByHand starts a server as an operator would, with the master's config file and args,
// makes it take a write (a lock it grants), and ends it: killed (SIGKILL), or with shutdown
// a SHUTDOWN (its writes with the AOF off are lost either way).
func (p *policy) runByHand(shutdown bool, args ...string) {
	p.t.Helper()
	srv := p.startServerConfig(args...)
	ctx := context.Background()
	if err := srv.admin.Set(ctx, "lock", "granted by the server run by hand", 0).Err(); err != nil {
		p.t.Fatal(err)
	}
	if !shutdown {
		srv.kill()
		return
	}
	_ = srv.admin.Shutdown(ctx).Err() // the connection drops as it exits
	if err := srv.wait(); err != nil {
		p.t.Fatalf("the server run by hand did not exit 0 after SHUTDOWN: %v", err)
	}
}

// TestHandStartVoidsTheCleanMarker: the stopped step puts a token in the server's pidfile
// after a clean stop, and the clean marker names it. A server started by hand with the
// master's config writes its pid over the token at its start, whatever else its command line
// changes, and removes the file at a clean exit: either way the marker no longer counts and
// the next start holds restart_delay from now. The control: nothing ran since the clean stop,
// and the start is at once. A marker of an earlier version (v3, no token) fails closed.
func TestHandStartVoidsTheCleanMarker(t *testing.T) {
	const delayMS = 2_000
	for _, tc := range []struct {
		name     string
		between  func(p *policy)
		atOnce   bool
		announce string
	}{
		{name: "control: nothing ran since the clean stop", between: func(*policy) {}, atOnce: true},
		{name: "started by hand with --appendonly no, then killed", between: func(p *policy) { p.runByHand(false, "--appendonly", "no") }},
		{name: "started by hand with another dir, then killed", between: func(p *policy) { p.runByHand(false, "--dir", p.t.TempDir()) }},
		{name: "started by hand with --appendonly no, then shut down cleanly", between: func(p *policy) { p.runByHand(true, "--appendonly", "no") }},
		{name: "the token file removed", between: func(p *policy) {
			if err := os.Remove(p.pidFile()); err != nil {
				p.t.Fatal(err)
			}
		}},
		{name: "a marker of an earlier version (v3, no token) fails closed", between: func(p *policy) {
			line := strings.Fields(p.read(hold.HostCleanMarker))
			p.write(hold.HostCleanMarker, strings.Join([]string{"v3", line[1], line[2], line[3], line[4], line[6]}, " ")+"\n")
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := newPolicy(t, delayMS*time.Millisecond)
			const clock = 9_000_000
			p.setClock(clock)
			p.cleanStop()
			if u, err := user.Lookup("redis"); err == nil {
				// The token is the service user's (the server overwrites it as that user).
				var st syscall.Stat_t
				if err := syscall.Stat(p.pidFile(), &st); err != nil || strconv.Itoa(int(st.Uid)) != u.Uid {
					t.Fatalf("the pidfile's token: %v, owner %d, want the service user %s (%s)", err, st.Uid, u.Username, u.Uid)
				}
			}
			tc.between(p)
			g := p.startGate()
			want := "starting at once"
			if !tc.atOnce {
				want = fmt.Sprintf("holding the start for %dms", delayMS)
			}
			if !g.waitFor(want) {
				t.Fatalf("the gate did not say %q:\n%s", want, g.output())
			}
			if !tc.atOnce {
				p.setClock(clock + delayMS)
			}
			if err := g.wait(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
