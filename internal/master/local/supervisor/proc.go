package supervisor

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/local/dirid"
)

// Pids recorded in files can be recycled by the kernel for unrelated processes. Before this
// package signals a pid it proves from /proc that the pid is still the process it means.

// processAlive reports whether pid exists and is not a zombie (a zombie has exited; only its
// parent's wait is missing).
func processAlive(pid int) bool {
	state := procState(pid)
	return state != 0 && state != 'Z' && state != 'X'
}

// processRunning reports whether pid is alive and not stopped (SIGSTOP, or a debugger): a
// running server may be serving clients, however slowly it answers the health check; a
// stopped one serves nobody until it is continued.
func processRunning(pid int) bool {
	state := procState(pid)
	return processAlive(pid) && state != 'T' && state != 't'
}

// procState returns the state letter of /proc/<pid>/stat (R, S, D, T, t, Z, X, ...), or 0
// when there is no such process.
func procState(pid int) byte {
	if pid <= 0 {
		return 0
	}
	if err := syscall.Kill(pid, 0); err != nil && err != syscall.EPERM {
		return 0
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	// The state follows the parenthesised command name, which may itself contain ") ".
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 || i+2 >= len(stat) {
		return 0
	}
	return stat[i+2]
}

// isSupervisorProcess reports whether pid is a live supervisor for dataDir: its command line
// is "<exe> supervise <dir>" where dir is dataDir by any spelling (a symlink, a bind mount:
// dirid.Same), so that a second spelling never hides a running master.
func isSupervisorProcess(pid int, dataDir string) bool {
	if !processAlive(pid) {
		return false
	}
	raw := readCmdline(pid)
	args := strings.Split(strings.TrimRight(string(raw), "\x00"), "\x00")
	for i := 1; i+1 < len(args); i++ {
		if args[i] == "supervise" && dirid.Same(args[i+1], dataDir) {
			return true
		}
	}
	return false
}

// readCmdline returns /proc/<pid>/cmdline. A process caught in the middle of execve (a
// supervisor Spawn just started: the parent learns of the exec before the kernel has set up
// the new argument area) reads as empty for a moment, so an empty read is retried briefly.
func readCmdline(pid int) []byte {
	path := "/proc/" + strconv.Itoa(pid) + "/cmdline"
	for attempt := 0; ; attempt++ {
		raw, err := os.ReadFile(path)
		if err != nil || len(raw) > 0 || attempt == 100 || !processAlive(pid) {
			return raw
		}
		time.Sleep(time.Millisecond)
	}
}

// isRedisProcess reports whether pid is a live redis-server of this master: its working dir
// is the data dir (redis-server chdirs to its `dir`) and it runs the configured server
// binary. Redis rewrites its command line (proc-title), so that cannot be used.
func isRedisProcess(pid int, c Config) bool {
	if !processAlive(pid) {
		return false
	}
	proc := "/proc/" + strconv.Itoa(pid)
	cwd, err := os.Readlink(proc + "/cwd")
	if err != nil || !samePath(cwd, c.DataDir) {
		return false
	}
	if exe, err := os.Readlink(proc + "/exe"); err == nil {
		if bin, err := exec.LookPath(c.ServerBinary); err == nil && samePath(exe, bin) {
			return true
		}
	}
	// The binary may have been replaced on disk (exe then ends in " (deleted)"): fall back
	// to the command name the kernel recorded at exec, truncated to 15 bytes.
	comm, err := os.ReadFile(proc + "/comm")
	if err != nil {
		return false
	}
	name := filepath.Base(c.ServerBinary)
	if len(name) > 15 {
		name = name[:15]
	}
	return strings.TrimSpace(string(comm)) == name
}

func samePath(a, b string) bool { return dirid.Same(a, b) }

// Live is the recorded State of a data dir together with what /proc says actually runs:
// recorded pids go stale when a process dies without its supervisor noticing (the
// supervisor itself was killed), and the kernel may hand them to unrelated processes.
type Live struct {
	State
	SupervisorAlive bool // State.SupervisorPID is a running "supervise <data dir>" process
	RedisAlive      bool // State.RedisPID is a running server of this data dir
}

// Inspect reads the state of dataDir and checks its pids against /proc. The error wraps
// os.ErrNotExist when no supervisor ever ran there. A live supervisor that holds the data
// dir's lock but has not written its state yet (the state still names a dead predecessor)
// is reported as the supervisor.
func Inspect(dataDir string) (Live, error) {
	dir, err := filepath.Abs(dataDir)
	if err != nil {
		return Live{}, err
	}
	st, err := ReadState(dir)
	if err != nil {
		return Live{}, err
	}
	live := Live{State: st, SupervisorAlive: isSupervisorProcess(st.SupervisorPID, dir)}
	if holder := lockHolder(dir); !live.SupervisorAlive && holder != st.SupervisorPID && isSupervisorProcess(holder, dir) {
		live.SupervisorPID, live.SupervisorAlive = holder, true
	}
	if c, err := LoadConfig(dir); err == nil {
		live.RedisAlive = isRedisProcess(st.RedisPID, c)
	}
	return live, nil
}
