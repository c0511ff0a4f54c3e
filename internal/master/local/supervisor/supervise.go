package supervisor

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/funclib"
	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/master/hold"
)

// Exit codes of Main.
const (
	ExitOK     = 0 // the master stopped cleanly (or the supervisor was stopped while holding)
	ExitFailed = 1 // the supervisor could not do its job; see supervisor.log and State.LastError
	ExitConfig = 2 // supervisor.json is missing or invalid
	ExitLocked = 3 // another supervisor runs for the data dir
)

// HookTimeout bounds every hook; a hook still running then is killed (its process group).
const HookTimeout = 30 * time.Second

const (
	pingInterval  = 100 * time.Millisecond
	pingTimeout   = 500 * time.Millisecond // a paused or overloaded master must not stall the loop
	stateInterval = time.Second            // state rewrite period while the master runs
	// shutdownTimeout is how long redis-server gets to stop cleanly after SIGTERM before it
	// is killed (and the stop counts as unclean: no marker).
	shutdownTimeout = time.Minute
)

// Main is the supervisor's body: it supervises the master described by
// <dataDir>/supervisor.json until the master stops cleanly or the supervisor is told to stop
// (SIGTERM or SIGINT), and returns the process exit code (ExitOK, ExitFailed, ExitConfig,
// ExitLocked). SIGHUP reloads supervisor.json and rewrites the state: hooks and a longer
// restart delay apply at once (a hold in progress is extended), a shorter delay once the
// locks granted under the longer one have expired (HoldFloor), addr and admin password
// re-point the health check, server binary and config file apply at the next start of
// redis-server. Call it from main when
// os.Args[1] == "supervise".
func Main(dataDir string) int {
	// What the supervisor and its redis-server create in the data dir (the AOF, which holds
	// the lock tokens, the logs) is readable by this user only; the files that need another
	// mode set it themselves (metrics.prom, 0644).
	syscall.Umask(0o077)
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "supervisor: data dir %q: %v\n", dataDir, err)
		return ExitConfig
	}
	logFile, err := os.OpenFile(filepath.Join(dir, LogFileName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		fmt.Fprintf(os.Stderr, "supervisor: open log in %s: %v\n", dir, err)
		return ExitConfig
	}
	defer logFile.Close()
	log := slog.New(slog.NewTextHandler(logFile, nil)).With("supervisor_pid", os.Getpid())
	// Spawn points stderr at the log already; otherwise fatal messages go to both.
	report := func(msg string) {
		log.Error(msg)
		if fi, err := os.Stderr.Stat(); err == nil {
			if li, err := logFile.Stat(); err == nil && os.SameFile(fi, li) {
				return
			}
		}
		fmt.Fprintln(os.Stderr, msg)
	}

	cfg, err := LoadConfig(dir)
	if err == nil && !samePath(cfg.DataDir, dir) {
		err = fmt.Errorf("supervisor config: data_dir %q is not the dir it was read from (%s)", cfg.DataDir, dir)
	}
	if err != nil {
		report(err.Error())
		return ExitConfig
	}
	lock, holder, err := lockDataDir(dir)
	if errors.Is(err, errLocked) {
		report(fmt.Sprintf("supervisor: another supervisor (pid %d) already runs for %s: stop it first", holder, dir))
		return ExitLocked
	}
	if err != nil {
		report(err.Error())
		return ExitFailed
	}
	defer lock.Close()

	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	stopCtx, requestStop := context.WithCancel(context.Background())
	defer requestStop()
	reload := make(chan struct{}, 1)
	go func() {
		for sig := range sigs {
			if sig == syscall.SIGHUP {
				select {
				case reload <- struct{}{}:
				default:
				}
				continue
			}
			log.Info("stop requested", "signal", sig.String())
			requestStop()
		}
	}()
	defer func() { signal.Stop(sigs); close(sigs) }()

	s := &supervisor{dir: dir, cfg: cfg, log: log, logFile: logFile, stop: stopCtx, reload: reload}
	return s.run()
}

// supervisor is the state of one running supervisor. Only Main's goroutine touches it.
type supervisor struct {
	dir     string
	cfg     Config
	log     *slog.Logger
	logFile *os.File
	stop    context.Context // done once SIGTERM/SIGINT arrived
	reload  chan struct{}   // SIGHUP
	st      State
}

func (s *supervisor) run() int {
	prev, err := ReadState(s.dir)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		// The state is the hold record and the floor (the delay earlier runs granted locks
		// under): unreadable, no hold can be computed. It is left as it is (replaced, it would
		// forget that delay), and the master stays down.
		s.log.Error("supervisor exiting: the master stays down", "err", fmt.Sprintf("%v: the delay earlier runs granted "+
			"locks under is unknown; once the largest restart delay this master ever ran with has passed since it last "+
			"served, remove %s", err, filepath.Join(s.dir, StateFileName)))
		return ExitFailed
	}
	stateExisted := err == nil
	s.st = State{SupervisorPID: os.Getpid(), Status: StatusStarting, LastAlive: prev.LastAlive, Restarts: prev.Restarts,
		HoldFloor: prev.HoldFloor, Crashes: prev.Crashes, LastExit: prev.LastExit,
		LargestDelay: largestDelay(prev, s.cfg.RestartDelay)}
	s.log.Info("supervisor started", "master", s.cfg.Name, "addr", s.cfg.Addr, "restart_delay", s.cfg.RestartDelay.String())

	// A redis-server left behind by a supervisor that was killed still serves: stop it
	// cleanly, so that it is restarted under supervision without a delay.
	if prev.RedisPID != 0 && isRedisProcess(prev.RedisPID, s.cfg) {
		s.log.Warn("found the master running without its supervisor: stopping it cleanly", "redis_pid", prev.RedisPID)
		// Not bound to a stop request: an interrupted shutdown would leave no marker.
		ctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
		err := stopOrphan(ctx, s.cfg, prev.RedisPID, !stopUnderway(prev), s.log)
		cancel()
		// It served until now. Its AOF is complete (clean stop), but should it be lost later,
		// the locks it granted are bounded by the delay it ran under. The same holds when the
		// stop failed (it died without a clean shutdown, or still runs): then the next start
		// must hold from now, and a pid that still runs stays recorded (see exit) so that
		// Running, Inspect and Stop still find it.
		s.st.LastAlive, s.st.HoldFloor = orphanStopped(prev, s.cfg.RestartDelay)
		if err != nil {
			s.st.RedisPID = prev.RedisPID
			return s.exit(ExitFailed, fmt.Sprintf("stop the unsupervised redis-server pid %d: %v", prev.RedisPID, err))
		}
	}

	restart := false
	crashedPID := prev.RedisPID // the pid hooks are told about: the server being replaced
	goneAt, found, stopped, err := s.awaitNoServer()
	switch {
	case err != nil:
		return s.exit(ExitFailed, "cannot record the hold ("+err.Error()+"): the master stays down")
	case stopped:
		return s.exit(ExitOK, "")
	}
	now := time.Now()
	until, hold, why := ownHoldUntil(s.dir, now, true, s.cfg.RestartDelay)
	if found {
		hold, why = true, "a server no record named served on the master's address or data dir until "+goneAt.Format(time.RFC3339Nano)
		until = later(until, goneAt.Add(s.cfg.RestartDelay))
	}
	ownWhy := why
	// Masters of other data dirs that served on the address (and this dir's own, when its
	// records are gone) hold it too, until their locks may have expired: not a crash of this
	// master, so no hook runs for it.
	ownRecords := hasData(s.dir) || stateExisted && (prev.RedisPID != 0 || !prev.LastAlive.IsZero())
	addrUntil, addrHold, addrWhy := addressHold(s.cfg, s.dir, now, ownRecords)
	if hold {
		// Persist the hold: HoldUntil, asked while this supervisor holds, must agree with it.
		// When the master stopped is unknown, it may have served until now.
		if s.st.LastAlive.IsZero() || (prev.Status != StatusHolding && prev.Status != StatusStopped) {
			s.st.LastAlive = time.Now()
		}
		s.st.HoldFloor = later(s.st.HoldFloor, until)
		s.st.Crashes++
		s.st.LastExit = s.st.LastAlive
	}
	if addrHold {
		s.st.HoldFloor = later(s.st.HoldFloor, addrUntil)
		// The state must stay readable while it holds: a floor further ahead than any delay
		// this dir ran under would read as out of bounds.
		s.st.LargestDelay = max(s.st.LargestDelay, min(addrUntil.Sub(now)+time.Millisecond, maxAddressHold))
		if why = addrWhy; hold {
			why = ownWhy + "; " + addrWhy
		}
	}
	if hold || addrHold {
		s.log.Warn("holding the master back before its first start", "why", why)
		s.setHolding()
		if err := s.writeState(); err != nil {
			return s.exit(ExitFailed, "cannot record the hold ("+err.Error()+"): the master stays down")
		}
		// An unclean stop found now is a crash seen late: the same hooks run.
		if hold {
			if s.runHook("crash", s.cfg.Hooks.OnCrash, crashedPID); s.stopRequested() {
				return s.exit(ExitOK, "")
			}
		}
		if stopped := s.hold(); stopped {
			return s.exit(ExitOK, "")
		}
		restart = hold
	}
	for {
		if s.stopRequested() {
			return s.exit(ExitOK, "")
		}
		// A server started by hand during the hold: wait it out, then hold from its end.
		goneAt, found, stopped, err := s.awaitNoServer()
		switch {
		case err != nil:
			return s.exit(ExitFailed, "cannot record the hold ("+err.Error()+"): the master stays down")
		case stopped:
			return s.exit(ExitOK, "")
		case found:
			s.st.LastAlive = goneAt
			s.setHolding()
			if err := s.writeState(); err != nil {
				return s.exit(ExitFailed, "cannot record the hold ("+err.Error()+"): the master stays down")
			}
			if stopped := s.hold(); stopped {
				return s.exit(ExitOK, "")
			}
			restart = true
			continue
		}
		if restart {
			if s.runHook("before_restart", s.cfg.Hooks.BeforeRestart, crashedPID); s.stopRequested() {
				return s.exit(ExitOK, "")
			}
		}
		res := s.serve(restart)
		switch {
		case res.clean:
			return s.exit(ExitOK, "")
		case res.giveUp:
			// Asked to stop but redis-server did not exit cleanly, or the marker could not
			// be written: no marker, and the next start holds.
			return s.exit(ExitFailed, res.err)
		}
		crashedPID = res.pid
		s.st.LastError = res.err
		s.st.Crashes++
		s.log.Error("master crashed", "err", res.err, "last_alive", s.st.LastAlive.Format(time.RFC3339Nano))
		s.setHolding()
		if err := s.writeState(); err != nil {
			return s.exit(ExitFailed, "cannot record the hold ("+err.Error()+"): the master stays down")
		}
		if s.runHook("crash", s.cfg.Hooks.OnCrash, res.pid); s.stopRequested() {
			return s.exit(ExitOK, "")
		}
		if stopped := s.hold(); stopped {
			return s.exit(ExitOK, "")
		}
		restart = true
	}
}

func (s *supervisor) stopRequested() bool { return s.stop.Err() != nil }

// setHolding sets the status to holding and RestartAt to LastAlive + RestartDelay, or to
// HoldFloor when that is later (locks granted under a larger delay), and raises the floor
// to RestartAt: a reload that lowers the delay later cannot bring the restart forward.
func (s *supervisor) setHolding() {
	s.st.Status = StatusHolding
	s.st.RestartAt = later(s.st.LastAlive.Add(s.cfg.RestartDelay), s.st.HoldFloor)
	s.st.HoldFloor = s.st.RestartAt
}

// orphanStopped returns LastAlive and HoldFloor after a redis-server that ran without its
// supervisor was stopped cleanly just now, under the delay recorded in prev (or delay, if
// larger).
func orphanStopped(prev State, delay time.Duration) (lastAlive, floor time.Time) {
	now := time.Now()
	if !prev.LastAlive.IsZero() {
		delay = max(delay, prev.HoldFloor.Sub(prev.LastAlive))
	}
	return now, later(prev.HoldFloor, now.Add(delay))
}

// hold keeps the master down until RestartAt (see setHolding). It reports whether a stop was
// requested meanwhile. SIGHUP may change the delay: a longer one extends the hold, a shorter
// one never shortens it.
//
// A server no record names that serves during the hold (run by hand on the address, or in
// the data dir) grants locks of its own: the hold then counts from when it was gone, even
// when it is gone before the hold would have ended. It is looked for every stateInterval
// (a scan of /proc: not every health-check tick); a server that lives shorter than that may
// be missed.
func (s *supervisor) hold() (stopped bool) {
	look := time.NewTicker(stateInterval)
	defer look.Stop()
	for {
		s.setHolding()
		s.writeState()
		s.log.Info("holding", "last_alive", s.st.LastAlive.Format(time.RFC3339Nano),
			"restart_at", s.st.RestartAt.Format(time.RFC3339Nano), "restart_delay", s.cfg.RestartDelay.String())
		// time.Until uses the monotonic clock when LastAlive came from this process, so a
		// wall-clock step cannot shorten the hold.
		timer := time.NewTimer(time.Until(s.st.RestartAt))
	wait:
		for {
			select {
			case <-timer.C:
				return false
			case <-s.stop.Done():
				timer.Stop()
				return true
			case <-s.reload:
				timer.Stop()
				s.reloadConfig()
				break wait
			case <-look.C:
				goneAt, found, stopped, err := s.awaitNoServer()
				switch {
				case stopped:
					timer.Stop()
					return true
				case err != nil:
					// The state could not say so; this supervisor still holds from now, and
					// a start writes the state first (it stays down if that fails).
					goneAt, found = time.Now(), true
				}
				if found {
					timer.Stop()
					s.st.LastAlive = later(s.st.LastAlive, goneAt)
					break wait
				}
			}
		}
	}
}

func (s *supervisor) reloadConfig() {
	c, err := LoadConfig(s.dir)
	if err == nil && !samePath(c.DataDir, s.dir) {
		err = fmt.Errorf("data_dir %q is not %s", c.DataDir, s.dir)
	}
	if err != nil {
		s.log.Error("reload failed: keeping the current config", "err", err)
		return
	}
	s.cfg = c
	s.st.LargestDelay = largestDelay(s.st, c.RestartDelay)
	s.log.Info("config reloaded", "restart_delay", c.RestartDelay.String())
}

// serveResult says how a run of redis-server ended.
type serveResult struct {
	pid    int
	clean  bool // exited 0: marker written
	giveUp bool // the supervisor must exit without a restart (and without a marker)
	err    string
}

// serve starts redis-server and watches it until it exits.
func (s *supervisor) serve(restart bool) serveResult {
	if err := removeCleanMarker(s.dir); err != nil {
		// Starting with a marker that might survive would skip a needed hold.
		return serveResult{giveUp: true, err: err.Error() + ": the master stays down"}
	}
	// The start is recorded before it happens: should the supervisor die right after it,
	// the next one must know that a master may have served here.
	s.st.Status = StatusStarting
	s.st.LastAlive = time.Now()
	s.st.HoldFloor = later(s.st.HoldFloor, s.st.LastAlive.Add(s.cfg.RestartDelay))
	if err := s.writeState(); err != nil {
		return serveResult{giveUp: true, err: err.Error() + ": the master stays down"}
	}
	cmd := exec.Command(s.cfg.ServerBinary, s.cfg.ConfigFile)
	cmd.Dir = s.dir
	cmd.Stdout = s.logFile
	cmd.Stderr = s.logFile
	cmd.Env = minimalEnv()
	// Own process group: signals meant for the supervisor's group do not reach redis-server;
	// only the supervisor decides how it stops.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	startedAt := time.Now()
	if err := cmd.Start(); err != nil {
		s.st.LastAlive = startedAt
		return serveResult{err: fmt.Sprintf("start %s: %v", s.cfg.ServerBinary, err)}
	}
	pid := cmd.Process.Pid
	// The moment Wait returns is when the supervisor learns of the exit (the kernel's wait
	// status, as the server's parent): never earlier than the exit itself.
	type exit struct {
		err error
		at  time.Time
	}
	exited := make(chan exit, 1)
	go func() {
		err := cmd.Wait()
		exited <- exit{err, time.Now()}
	}()

	// A master may serve from the moment it starts, before the first PING answers.
	s.st.LastAlive = startedAt
	s.st.HoldFloor = later(s.st.HoldFloor, startedAt.Add(s.cfg.RestartDelay))
	s.st.RedisPID = pid
	s.st.Status = StatusStarting
	s.writeState()
	s.log.Info("redis-server started", "redis_pid", pid, "restart", restart)

	alive := &aliveClock{reply: startedAt}
	prober := startProbe(s.cfg, alive, s.log)

	var hookWG sync.WaitGroup
	hookCtx, cancelHooks := context.WithCancel(context.Background())
	defer func() { cancelHooks(); hookWG.Wait() }()

	ticker := time.NewTicker(pingInterval)
	defer ticker.Stop()
	stopCh := s.stop.Done()
	var killTimer <-chan time.Time
	stopping, killed, unresponsive := false, false, false
	lastWrite := time.Now()
	var published time.Duration // the restart delay last published (0: not yet)
	var repl *replState         // the server's replication state published at its start (nil: not yet)
	var lastBeat time.Time      // the last heartbeat (hold.FieldHeartbeatMS)
	replaced := ""              // why the server's dataset was replaced while it served ("": it was not)
	// The config file as it was when it matched the rendered one, and its drift since;
	// startDrift is the drift of the file this server was started on, for its whole run.
	drift, rendered := configDrift(s.cfg, nil)
	startDrift := drift
	publishedDrift := drift
	publish := func() {
		d := heldFromNow(s.st, s.cfg.RestartDelay, time.Now())
		if d == published && drift == publishedDrift {
			return
		}
		if _, err := publishDeployment(s.cfg, d, drift, repl); err != nil {
			var r *replacedError
			if errors.As(err, &r) && replaced == "" {
				// As the heartbeat does: killed, held down like after a crash.
				replaced = r.why
				s.log.Error("the server's dataset was replaced while it served: killing it, held down as after a crash", "redis_pid", pid, "why", r.why)
				_ = cmd.Process.Signal(syscall.SIGKILL)
				return
			}
			s.log.Error("cannot publish the restart delay", "redis_pid", pid, "err", err)
			return
		}
		if drift != publishedDrift && drift != "" {
			s.log.Error("the config file on disk is not the one rendered: published in the deployment record", "drift", drift)
		}
		published, publishedDrift = d, drift
	}
	for {
		select {
		case ex := <-exited:
			waitErr := ex.err
			// The exit was observed: the server served nobody after it, and the hold counts
			// from it (not from the last 100ms tick that saw the process running, which
			// would end the hold up to a tick early, measured from the exit).
			prober.stop()
			s.st.LastAlive = later(s.st.LastAlive, ex.at)
			// Its locks live until the exit + the delay it ran under, however this run ends
			// (a crash, an exit 0 that proves nothing, a marker that cannot be written).
			s.st.HoldFloor = later(s.st.HoldFloor, s.st.LastAlive.Add(s.cfg.RestartDelay))
			s.st.LastExit = ex.at
			s.st.RedisPID = 0
			notDurable := ""
			if waitErr == nil {
				if notDurable = alive.notDurable(); notDurable == "" {
					notDurable = durableExit(s.cfg, pid)
				}
				if replaced != "" {
					// What it fsynced is another server's dataset, not the locks it granted.
					notDurable = "its dataset was replaced while it served: " + replaced
				}
			}
			if waitErr == nil && notDurable != "" {
				// It exited 0, but what it acknowledged may be lost (the AOF was off): an
				// unclean stop, and nobody asked the supervisor for a restart.
				return serveResult{pid: pid, giveUp: true,
					err: fmt.Sprintf("redis-server pid %d exited 0 without a provably durable shutdown (%s): no clean marker, the next start holds", pid, notDurable)}
			}
			if waitErr == nil {
				if err := writeCleanMarker(s.dir, pid); err != nil {
					return serveResult{pid: pid, giveUp: true, err: err.Error()}
				}
				s.log.Info("redis-server stopped cleanly: clean marker written", "redis_pid", pid)
				return serveResult{pid: pid, clean: true}
			}
			msg := fmt.Sprintf("redis-server pid %d %v", pid, describeExit(waitErr))
			if replaced != "" {
				msg = fmt.Sprintf("redis-server pid %d killed: its dataset was replaced while it served (%s)", pid, replaced)
			}
			if stopping {
				if killed {
					msg += fmt.Sprintf(" (killed: no clean exit within %v of SIGTERM)", shutdownTimeout)
				}
				// It ran until now; count the hold from here.
				s.st.LastAlive = time.Now()
				s.st.HoldFloor = later(s.st.HoldFloor, s.st.LastAlive.Add(s.cfg.RestartDelay))
				return serveResult{pid: pid, giveUp: true, err: msg}
			}
			return serveResult{pid: pid, err: msg}
		case <-stopCh:
			stopCh = nil
			stopping = true
			s.st.Status = StatusStopping
			s.writeState()
			s.log.Info("stopping redis-server cleanly", "redis_pid", pid)
			cancelHooks()
			// SIGCONT wakes a paused server, so that it can rewrite its AOF (bounded, best
			// effort: see compactAOF) and then shut down on SIGTERM like on SHUTDOWN (AOF
			// fsynced, exit 0). The rewrite runs here, on the loop, because it is bounded.
			// cmd.Process signals nothing once the exit was reaped meanwhile (pidfd): the pid
			// may already belong to another process.
			_ = cmd.Process.Signal(syscall.SIGCONT)
			if replaced == "" && repl != nil && !unresponsive {
				// A replacement since the last heartbeat must not end in a clean marker.
				if why, _, err := heartbeat(s.cfg, *repl); err == nil && why != "" {
					replaced = why
					s.log.Error("the server's dataset was replaced while it served: its stop is no clean stop", "redis_pid", pid, "why", why)
				}
			}
			compactAOF(context.Background(), s.cfg, s.log)
			_ = cmd.Process.Signal(syscall.SIGTERM)
			_ = cmd.Process.Signal(syscall.SIGCONT)
			killTimer = time.After(shutdownTimeout)
		case <-killTimer:
			killed = true
			s.log.Error("redis-server did not stop cleanly in time: killing it", "redis_pid", pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		case <-s.reload:
			old := s.cfg
			if processRunning(pid) {
				// It served under the old delay until this moment, not only until the last
				// tick: a lower delay must not cover the locks granted in between.
				s.st.LastAlive = time.Now()
				s.st.HoldFloor = later(s.st.HoldFloor, s.st.LastAlive.Add(old.RestartDelay))
			}
			s.reloadConfig()
			if s.cfg.Addr != old.Addr || s.cfg.AdminPassword != old.AdminPassword {
				// The provider changes the password at runtime too: PING with the new one.
				prober.stop()
				prober = startProbe(s.cfg, alive, s.log)
			}
			// Persist a longer delay at once: should this supervisor die with its master
			// now, the next one must hold for it. (The write also tells the provider that
			// the reload happened.)
			s.st.HoldFloor = later(s.st.HoldFloor, s.st.LastAlive.Add(s.cfg.RestartDelay))
			s.writeState()
			lastWrite = time.Now()
			var now []byte
			if drift, now = configDrift(s.cfg, rendered); drift == "" && now != nil {
				rendered = now
			}
			drift = loadedDrift(drift, startDrift)
			if s.st.Status == StatusRunning {
				// A validator must see the delay now in force, not the one of the start.
				published = 0
				publish()
			}
		case <-ticker.C:
			// Alive is what /proc says, not what PING says: a master that answers slower than
			// pingTimeout (overloaded, or the check cannot reach it) may still grant locks to
			// clients with a longer timeout. Only a stopped (SIGSTOP) process serves nobody:
			// its LastAlive freezes, and that is not a crash.
			if processRunning(pid) {
				s.st.LastAlive = time.Now()
			}
			s.st.HoldFloor = later(s.st.HoldFloor, s.st.LastAlive.Add(s.cfg.RestartDelay))
			if stopCh != nil && s.stop.Err() != nil {
				// A stop is pending and comes first: select picks among ready cases at random,
				// and the round trips below take a timeout each to a server that does not
				// answer (a second a tick), which delayed a stop by seconds.
				continue
			}
			if silent := time.Since(alive.lastReply()) > stateInterval; silent != unresponsive && s.st.Status == StatusRunning {
				unresponsive = silent
				if silent {
					s.log.Warn("redis-server stopped answering (paused or overloaded?): not a crash while the process lives",
						"redis_pid", pid, "last_reply", alive.lastReply().Format(time.RFC3339Nano))
				} else {
					s.log.Info("redis-server answers again", "redis_pid", pid)
				}
			}
			if s.st.Status == StatusStarting && alive.lastPong().After(startedAt) {
				// The admin loads the kit's function library at every start, before the
				// master counts as running: lock users may run its functions only. Until it
				// loads, the master stays "starting" with the reason in LastError (the
				// create fails with it at its timeout).
				err := loadFunctions(s.cfg)
				if err == nil {
					d := heldFromNow(s.st, s.cfg.RestartDelay, time.Now())
					var st replState
					if st, err = publishDeployment(s.cfg, d, drift, nil); err == nil {
						published, publishedDrift, repl = d, drift, &st
					}
				}
				if err != nil {
					if msg := err.Error(); msg != s.st.LastError {
						s.st.LastError = msg
						s.writeState()
						lastWrite = time.Now()
						s.log.Error("cannot load the function library or publish the restart delay: the master stays starting", "redis_pid", pid, "err", err)
					}
					continue
				}
				s.st.Status = StatusRunning
				if restart {
					s.st.Restarts++
				}
				s.st.LastError = ""
				s.writeState()
				lastWrite = time.Now()
				s.log.Info("redis-server answers; function library loaded, restart delay published", "redis_pid", pid)
				if restart && len(s.cfg.Hooks.AfterRestart) > 0 {
					// Run beside the health check: a slow hook must not stop LastAlive.
					run := s.hook("after_restart", s.cfg.Hooks.AfterRestart, pid)
					hookWG.Add(1)
					go func() { defer hookWG.Done(); run(hookCtx) }()
				}
				continue
			}
			if s.st.Status == StatusRunning {
				// While a floor lapses, and at once when it has: what a crash is held now.
				publish()
			}
			if s.st.Status == StatusRunning && time.Since(lastBeat) >= audit.DeploymentHeartbeatInterval && replaced == "" && repl != nil {
				lastBeat = time.Now()
				why, now, err := heartbeat(s.cfg, *repl)
				if err != nil {
					s.log.Error("cannot rewrite the heartbeat", "redis_pid", pid, "err", err)
				}
				if err == nil && why == "" && now.ID != repl.ID {
					// A new replication id without replication: a replica or a backup
					// attached (the backlog made), or the backlog freed. The record names
					// the new one.
					s.log.Info("the server's replication id changed without replication (a replica or backup attached, or the backlog freed): republished", "redis_pid", pid, "replid", now.ID)
					repl, published = &now, 0
					publish()
				}
				if why != "" {
					// Its lock keys and fence registers may be gone while it serves on: a lock
					// it granted can be granted again. Treated as a master that lost its data:
					// killed, so that it is held down like after a crash (restart_delay from
					// its exit), no heartbeat for it meanwhile.
					replaced = why
					s.log.Error("the server's dataset was replaced while it served: killing it, held down as after a crash", "redis_pid", pid, "why", why)
					_ = cmd.Process.Signal(syscall.SIGKILL)
				}
			}
			if time.Since(lastWrite) >= stateInterval {
				// The config on disk, once a second: a hand edit is published at once.
				var now []byte
				if drift, now = configDrift(s.cfg, rendered); drift == "" && now != nil {
					rendered = now
				}
				drift = loadedDrift(drift, startDrift)
				s.writeState()
				lastWrite = time.Now()
			}
		}
	}
}

// exit records the final state and returns code. A redis-server that still runs (an orphan
// that did not stop) keeps its pid in the state.
func (s *supervisor) exit(code int, lastError string) int {
	s.st.Status = StatusStopped
	if !isRedisProcess(s.st.RedisPID, s.cfg) {
		s.st.RedisPID = 0
	}
	if lastError != "" {
		s.st.LastError = lastError
		s.log.Error("supervisor exiting", "code", code, "err", lastError)
	} else {
		s.log.Info("supervisor exiting", "code", code, "clean_stop", CleanStop(s.dir))
	}
	s.writeState()
	return code
}

// writeState persists the state, then publishes it as metrics (metrics.prom).
func (s *supervisor) writeState() error {
	err := writeState(s.dir, s.st)
	if err != nil {
		s.log.Error("write state", "err", err)
	}
	if e := s.writeAddressEntry(); e != nil {
		s.log.Error("write the address record", "err", e)
		err = errors.Join(err, fmt.Errorf("supervisor: write the address record: %w", e))
	}
	if err := writeMetrics(s.dir, metricsText(s.cfg.Name, s.st, s.cfg)); err != nil {
		s.log.Error("write metrics", "err", err)
	}
	return err
}

func describeExit(err error) string {
	var exitErr *exec.ExitError
	if errors.As(err, &exitErr) {
		if ws, ok := exitErr.Sys().(syscall.WaitStatus); ok {
			switch {
			case ws.Signaled():
				return fmt.Sprintf("was killed by signal %d (%v)", int(ws.Signal()), ws.Signal())
			case ws.Exited():
				return fmt.Sprintf("exited with code %d", ws.ExitStatus())
			}
		}
	}
	return fmt.Sprintf("failed: %v", err)
}

// aliveClock records what the prober saw, for Main's goroutine to read.
type aliveClock struct {
	mu    sync.Mutex
	reply time.Time // last reply of any kind (for the log about an unresponsive master)
	pong  time.Time // last PONG: the server is ready (not loading, password right)
	// durability is why the persistence settings last read were not durable ("" when
	// they were, or were never read: then the server's log is the proof).
	durability string
}

func (a *aliveClock) sawConfig(notDurable string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.durability = notDurable
}

// notDurable says why the last persistence settings read do not make a shutdown durable.
func (a *aliveClock) notDurable() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.durability
}

func (a *aliveClock) saw(t time.Time, pong bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if t.After(a.reply) {
		a.reply = t
	}
	if pong && t.After(a.pong) {
		a.pong = t
	}
}

func (a *aliveClock) lastReply() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.reply
}

func (a *aliveClock) lastPong() time.Time {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.pong
}

type prober struct {
	cancel context.CancelFunc
	done   chan struct{}
}

func startProbe(c Config, alive *aliveClock, log *slog.Logger) *prober {
	ctx, cancel := context.WithCancel(context.Background())
	p := &prober{cancel: cancel, done: make(chan struct{})}
	go func() { defer close(p.done); probe(ctx, c, alive, log) }()
	return p
}

// stop returns once the prober has recorded its last observation.
func (p *prober) stop() {
	p.cancel()
	<-p.done
}

// probe PINGs the master every pingInterval until ctx is done and records each answer. It
// decides the status only (a PONG means ready: starting -> running) and what the log says
// about an unresponsive master; LastAlive comes from /proc, because a master that answers
// the probe late, with an error (LOADING, a wrong password) or not at all may still be
// serving other clients.
//
// A BUSY answer is a script or function that has run longer than busy-reply-threshold
// (the kit's own run in microseconds): the probe kills it (SCRIPT KILL, FUNCTION KILL),
// so that one client's Lua cannot stall the master.
func probe(ctx context.Context, c Config, alive *aliveClock, log *slog.Logger) {
	client := adminClient(c)
	defer client.Close()
	ticker := time.NewTicker(pingInterval)
	defer ticker.Stop()
	for {
		pingCtx, cancel := context.WithTimeout(ctx, pingTimeout)
		err := client.Ping(pingCtx).Err()
		cancel()
		if redis.HasErrorPrefix(err, "BUSY") {
			killBusyScript(ctx, client, log)
		}
		var reply redis.Error
		if err == nil || errors.As(err, &reply) {
			// The moment the answer arrived: later than when it was sent, so the hold is
			// never counted from too early.
			alive.saw(time.Now(), err == nil)
		}
		if err == nil {
			// What a shutdown now would persist (an admin may turn the AOF off at runtime).
			confCtx, cancel := context.WithTimeout(ctx, pingTimeout)
			conf, cerr := client.ConfigGet(confCtx, "append*").Result()
			cancel()
			if cerr == nil {
				alive.sawConfig(durableConfig(conf))
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// adminClient talks to the master as the admin; a TLS master's CA file is read as it is now
// (an update may have replaced it).
func adminClient(c Config) *redis.Client {
	var tlsConf *tls.Config
	if c.TLSCACertFile != "" {
		ca, _ := os.ReadFile(c.TLSCACertFile) // unreadable: trusts nothing, and the handshake error says so
		tlsConf = master.ClientTLS(string(ca))
	}
	return redis.NewClient(&redis.Options{
		Addr: c.Addr, Password: c.AdminPassword, TLSConfig: tlsConf,
		DialTimeout: pingTimeout, ReadTimeout: pingTimeout, WriteTimeout: pingTimeout,
		ContextTimeoutEnabled: true, MaxRetries: -1, PoolSize: 1, DisableIdentity: true,
	})
}

// killBusyScript stops the script or function that keeps the master busy. A script that
// already wrote cannot be killed (UNKILLABLE: only SHUTDOWN NOSAVE would stop it, losing
// its half-done writes); that is logged.
func killBusyScript(ctx context.Context, client *redis.Client, log *slog.Logger) {
	var errs []error
	for _, cmd := range [][]any{{"script", "kill"}, {"function", "kill"}} {
		killCtx, cancel := context.WithTimeout(ctx, pingTimeout)
		err := client.Do(killCtx, cmd...).Err()
		cancel()
		if err == nil {
			log.Warn("killed a script that kept redis-server busy beyond busy-reply-threshold", "command", fmt.Sprint(cmd...))
			return
		}
		errs = append(errs, err)
	}
	log.Error("redis-server is busy running a script that cannot be killed", "err", errors.Join(errs...))
}

// functionLoadTimeout bounds FUNCTION LOAD at a start. It runs on the supervisor's loop,
// so it gets no more than a health check does; a load cut short is tried again on the next
// tick (it takes well under a millisecond).
const functionLoadTimeout = pingTimeout

// loadFunctions loads the kit's function library as the admin (FUNCTION LOAD REPLACE).
func loadFunctions(c Config) error {
	client := adminClient(c)
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), functionLoadTimeout)
	defer cancel()
	return funclib.Load(ctx, client)
}

// largestDelay is the largest restart delay ever configured for the dir: the state's record
// of it, the delay the state was written under and the one configured now.
func largestDelay(st State, configured time.Duration) time.Duration {
	d := max(st.LargestDelay, configured)
	if !st.LastAlive.IsZero() {
		d = max(d, st.HoldFloor.Sub(st.LastAlive))
	}
	return min(d, hold.MaxRestartDelay)
}
