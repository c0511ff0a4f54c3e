package supervisor

import (
	"fmt"
	"net"
	"os"
	"strconv"
	"syscall"
	"time"
)

// unnamedServer finds a server that serves on the master's address or from its data dir
// although no record names it: a redis-server run by hand, or one a supervisor started and
// died before recording. It may be granting locks, so the master may not start beside it,
// and its locks count until it stops. pid is 0 when only the address answers (a server of
// another dir, which is not ours to stop); what is "" when nothing serves.
func unnamedServer(c Config) (pid int, what string) {
	if entries, err := os.ReadDir("/proc"); err == nil {
		for _, e := range entries {
			p, err := strconv.Atoi(e.Name())
			if err != nil || p == os.Getpid() {
				continue
			}
			if isRedisProcess(p, c) {
				return p, fmt.Sprintf("redis-server pid %d runs in %s", p, c.DataDir)
			}
		}
	}
	conn, err := net.DialTimeout("tcp", c.Addr, pingTimeout)
	if err != nil {
		return 0, ""
	}
	conn.Close()
	return 0, "a server accepts connections on " + c.Addr
}

// awaitNoServer waits while an unnamed server serves (stopping it when it is a server of
// this data dir, so that the wait ends) and returns when it was found gone: the hold counts
// from then. found is false when nothing served; stopped is true when a stop was requested.
func (s *supervisor) awaitNoServer() (goneAt time.Time, found, stopped bool, err error) {
	pid, what := unnamedServer(s.cfg)
	if what == "" {
		return time.Time{}, false, false, nil
	}
	s.log.Warn("a server no record names serves on the master's address or data dir: waiting until it stops, then holding restart_delay from then",
		"what", what)
	// The marker vouches for a data dir that server may change, and for no lock it grants.
	if err := removeCleanMarker(s.dir); err != nil {
		return time.Time{}, true, false, err
	}
	signalled, signalledAt := 0, time.Time{}
	lastWrite := time.Time{}
	for what != "" {
		switch {
		case pid == 0 || !isRedisProcess(pid, s.cfg):
		case pid != signalled:
			// Ours (its dir and binary prove it): a shutdown ends the wait.
			_ = signalPid(pid, syscall.SIGCONT)
			_ = signalPid(pid, syscall.SIGTERM)
			signalled, signalledAt = pid, time.Now()
		case time.Since(signalledAt) > shutdownTimeout:
			// It ignores SIGTERM (a script that never ends): the wait must end too.
			s.log.Error("the unnamed redis-server did not stop on SIGTERM: killing it", "redis_pid", pid)
			_ = signalPid(pid, syscall.SIGKILL)
		}
		if time.Since(lastWrite) >= stateInterval {
			s.st.Status = StatusHolding
			s.st.LastAlive = time.Now()
			s.st.HoldFloor = later(s.st.HoldFloor, s.st.LastAlive.Add(s.cfg.RestartDelay))
			s.st.RestartAt = s.st.HoldFloor
			s.st.LastError = what + ": waiting until it stops"
			s.st.UnnamedServer = what
			if err := s.writeState(); err != nil {
				return time.Time{}, true, false, err
			}
			lastWrite = time.Now()
		}
		select {
		case <-s.stop.Done():
			return time.Time{}, true, true, nil
		case <-time.After(pingInterval):
		}
		pid, what = unnamedServer(s.cfg)
	}
	goneAt = time.Now()
	s.log.Info("the unnamed server is gone: holding restart_delay from now")
	s.st.LastError = ""
	s.st.UnnamedServer = ""
	return goneAt, true, false, nil
}
