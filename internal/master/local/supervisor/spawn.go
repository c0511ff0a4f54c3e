package supervisor

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
)

// Spawn starts `executable args...` as a detached supervisor and returns its pid. The process
// gets its own session (setsid: no controlling terminal, not in the caller's process group,
// so a Ctrl-C or terraform stopping the provider plugin does not reach it), stdin from
// /dev/null, stdout and stderr appended to <dataDir>/supervisor.log, the data dir as working
// dir, no other file descriptor, and a minimal environment (see minimalEnv). The provider calls
// Spawn(os.Executable(), []string{"supervise", dataDir}, dataDir).
//
// A relative dataDir is made absolute, in args too, because Stop recognises the supervisor
// by the data dir on its command line.
//
// Reaping: the supervisor is the caller's child. Spawn waits for it in a goroutine, so when
// it exits while the caller lives (tests, a long-lived provider) no zombie is left; when the
// caller exits first (terraform kills the plugin after apply), the supervisor is re-parented
// to init (or the nearest subreaper), which reaps it. A double fork is not needed for either.
func Spawn(executable string, args []string, dataDir string) (pid int, err error) {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return 0, fmt.Errorf("supervisor: data dir %q: %w", dataDir, err)
	}
	args = append([]string(nil), args...)
	for i, a := range args {
		if a == dataDir {
			args[i] = dir
		}
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, fmt.Errorf("supervisor: create data dir: %w", err)
	}
	logFile, err := os.OpenFile(filepath.Join(dir, LogFileName), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return 0, fmt.Errorf("supervisor: open log: %w", err)
	}
	defer logFile.Close() // the child has its own copy
	devNull, err := os.Open(os.DevNull)
	if err != nil {
		return 0, err
	}
	defer devNull.Close()

	cmd := exec.Command(executable, args...)
	cmd.Dir = dir
	cmd.Stdin = devNull
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Env = minimalEnv()
	// Every descriptor Go opens is close-on-exec, so the child inherits exactly 0, 1 and 2.
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("supervisor: start %s: %w", executable, err)
	}
	go func() { _ = cmd.Wait() }()
	return cmd.Process.Pid, nil
}

// minimalEnv is the whole environment of the supervisor, redis-server and the hooks (which
// add their REDLOCK_* variables). They run for months after the terraform that started
// them, so they must not keep its environment: TF_VAR_* values, cloud credentials, tokens.
// PATH is kept so that a server or hook named without a path is found as it was at plan time.
func minimalEnv() []string {
	path := os.Getenv("PATH")
	if path == "" {
		path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	}
	env := []string{"PATH=" + path}
	for _, name := range []string{"HOME", "LANG", "LC_ALL", "TZ"} {
		if v, ok := os.LookupEnv(name); ok {
			env = append(env, name+"="+v)
		}
	}
	return env
}
