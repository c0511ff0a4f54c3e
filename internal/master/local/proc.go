package local

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/local/supervisor"
)

// pollInterval is how often Start, Update and Destroy look at the master while they wait.
const pollInterval = 100 * time.Millisecond

// ProcessAlive reports whether pid exists and is not a zombie.
func ProcessAlive(pid int) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := bytes.LastIndexByte(stat, ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z' && stat[i+2] != 'X'
}

// CmdlineHas reports whether pid's command line has arg (a recycled pid would not).
func CmdlineHas(pid int, arg string) bool {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/cmdline")
	if err != nil {
		return false
	}
	for _, a := range strings.Split(string(raw), "\x00") {
		if filepath.Clean(a) == filepath.Clean(arg) {
			return true
		}
	}
	return false
}

// KillLeftovers SIGKILLs what of the master in dir still runs after a failed clean stop
// (supervisor.Running: pids proven by /proc), and the supervisors among extra (pids from
// Spawn) that are still "supervise <dir>", and returns their pids. Last resort only.
func KillLeftovers(dir string, extra ...int) []int {
	killed := supervisor.Running(dir)
	for _, pid := range extra {
		if ProcessAlive(pid) && CmdlineHas(pid, dir) && !slices.Contains(killed, pid) {
			killed = append(killed, pid)
		}
	}
	for _, pid := range killed {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range killed {
		for ProcessAlive(pid) && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
	}
	return killed
}

// FreePort returns a port nothing listens on at bind right now.
func FreePort(bind string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(bind, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func portFree(bind string, port int) error {
	l, err := net.Listen("tcp", net.JoinHostPort(bind, strconv.Itoa(port)))
	if err != nil {
		return err
	}
	return l.Close()
}

func splitAddr(addr string) (host string, port int) {
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0
	}
	n, _ := strconv.Atoi(p)
	return h, n
}

func waitPortFree(ctx context.Context, addr string) error {
	host, p, err := net.SplitHostPort(addr)
	if err != nil {
		return nil // no address recorded: nothing was listening for us
	}
	port, _ := strconv.Atoi(p)
	for {
		err := portFree(host, port)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pollInterval):
		}
	}
}

// logTails returns the end of the supervisor and redis logs, for error messages.
func logTails(dir string) string {
	var b strings.Builder
	for _, name := range []string{supervisor.LogFileName, redisLogFileName} {
		f, err := os.Open(filepath.Join(dir, name))
		if err != nil {
			continue
		}
		if fi, err := f.Stat(); err == nil && fi.Size() > 2048 {
			_, _ = f.Seek(-2048, io.SeekEnd)
		}
		data, _ := io.ReadAll(f)
		f.Close()
		fmt.Fprintf(&b, "--- %s (end) ---\n%s\n", filepath.Join(dir, name), strings.TrimSpace(string(data)))
	}
	return b.String()
}
