package supervisor

import (
	"context"
	"log/slog"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
)

// runHook runs one hook to completion (or HookTimeout, or a stop request, which kill it).
func (s *supervisor) runHook(event string, argv []string, redisPID int) {
	if len(argv) == 0 {
		return
	}
	s.hook(event, argv, redisPID)(s.stop)
}

// hook prepares a hook from the supervisor's current config and state (on Main's goroutine)
// and returns the function that runs it, which may run on another goroutine.
func (s *supervisor) hook(event string, argv []string, redisPID int) func(ctx context.Context) {
	env := append(minimalEnv(),
		"REDLOCK_EVENT="+event,
		"REDLOCK_MASTER_NAME="+s.cfg.Name,
		"REDLOCK_MASTER_ADDR="+s.cfg.Addr,
		"REDLOCK_DATA_DIR="+s.dir,
		"REDLOCK_REDIS_PID="+strconv.Itoa(redisPID),
		"REDLOCK_"+hold.ShellName(hold.FieldRestartDelayMS)+"="+strconv.FormatInt(s.cfg.RestartDelay.Milliseconds(), 10),
		"REDLOCK_RESTART_AT="+formatTime(s.st.RestartAt),
	)
	dir, logFile, log := s.dir, s.logFile, s.log
	return func(ctx context.Context) { runHook(ctx, dir, logFile, log, event, argv, env) }
}

func runHook(ctx context.Context, dir string, logFile *os.File, log *slog.Logger, event string, argv, env []string) {
	ctx, cancel := context.WithTimeout(ctx, HookTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Env = env
	// Own process group, killed as a whole: a shell hook's children die with it.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second
	log.Info("hook started", "event", event, "argv", argv)
	if err := cmd.Run(); err != nil {
		log.Error("hook failed (the restart policy goes on)", "event", event, "err", err, "timed_out", ctx.Err() != nil)
		return
	}
	log.Info("hook done", "event", event)
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}
