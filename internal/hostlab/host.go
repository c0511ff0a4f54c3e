//go:build linux

package hostlab

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Host is one container: systemd as PID 1 under systemd-nspawn, in its own network
// namespace, with an overlay root whose upper layer is the host's "disk".
type Host struct {
	lab     *Lab
	index   int
	name    string
	addr    string
	netns   string
	machine string
	dir     string

	mu         sync.Mutex
	userData   string
	disk       int    // generation of the upper layer
	instance   int    // cloud-init instance counter
	instanceID string // current
	mounted    bool
	boots      int // generation of the cgroup / console log
	cg         *cgroup
	cmd        *exec.Cmd     // systemd-nspawn
	done       chan struct{} // closed when cmd has exited
	pid1       int           // host pid of the container's systemd
	lockFile   string        // nspawn's global image lock, left behind when nspawn is killed
}

// Name is the host's name (also its hostname).
func (h *Host) Name() string { return h.name }

// Address is the host's IPv4 address.
func (h *Host) Address() string { return h.addr }

// InstanceID is the cloud-init instance-id of the current disk.
func (h *Host) InstanceID() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.instanceID
}

// PID1 is the host-side pid of the container's systemd, 0 when it is not running.
func (h *Host) PID1() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.pid1
}

func (h *Host) root() string { return filepath.Join(h.dir, "root") }

// newDisk makes a fresh upper layer, mounts the overlay and writes the NoCloud seed
// with a new instance-id. h.mu held, host stopped.
func (h *Host) newDisk() error { return h.newDiskFrom("") }

// newDiskFrom is newDisk with the upper layer taken from clone (a copy of another disk's
// upper layer, moved into place) when clone is not "".
func (h *Host) newDiskFrom(clone string) error {
	if err := h.unmountLocked(); err != nil {
		return err
	}
	if h.disk > 0 {
		if err := removeTree(filepath.Join(h.dir, fmt.Sprintf("disk%d", h.disk))); err != nil {
			return err
		}
	}
	h.disk++
	h.instance++
	h.instanceID = fmt.Sprintf("%s-%d", h.machine, h.instance)
	disk := filepath.Join(h.dir, fmt.Sprintf("disk%d", h.disk))
	upper, work := filepath.Join(disk, "upper"), filepath.Join(disk, "work")
	for _, d := range []string{upper, work, h.root()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	if clone != "" {
		if err := os.Remove(upper); err != nil {
			return err
		}
		if err := os.Rename(clone, upper); err != nil {
			return fmt.Errorf("host %s: cloned disk: %w", h.name, err)
		}
	}
	opts := fmt.Sprintf("lowerdir=%s,upperdir=%s,workdir=%s", h.lab.image, upper, work)
	if err := unix.Mount("overlay", h.root(), "overlay", 0, opts); err != nil {
		return fmt.Errorf("host %s: mount overlay: %w", h.name, err)
	}
	h.mounted = true
	seed := filepath.Join(h.root(), "var/lib/cloud/seed/nocloud")
	if err := os.MkdirAll(seed, 0o755); err != nil {
		return err
	}
	meta := fmt.Sprintf("instance-id: %s\nlocal-hostname: %s\n", h.instanceID, h.name)
	if err := os.WriteFile(filepath.Join(seed, "meta-data"), []byte(meta), 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(seed, "user-data"), []byte(h.userData), 0o600)
}

func (h *Host) unmountLocked() error {
	if !h.mounted {
		return nil
	}
	if err := unmountUnder(h.root()); err != nil {
		return fmt.Errorf("host %s: %w", h.name, err)
	}
	h.mounted = false
	return nil
}

// startLocked starts systemd-nspawn in a fresh cgroup and waits for the container's
// systemd to exist. h.mu held.
func (h *Host) startLocked(ctx context.Context) error {
	if h.cmd != nil {
		return fmt.Errorf("host %s is running", h.name)
	}
	if !h.mounted {
		return fmt.Errorf("host %s has no disk", h.name)
	}
	h.boots++
	cg := &cgroup{roots: h.lab.cg, rel: fmt.Sprintf("hostlab-%s/%s.%d", h.lab.id, h.name, h.boots)}
	h.cg = cg
	if err := cg.create(); err != nil {
		return err
	}
	logPath := filepath.Join(h.dir, fmt.Sprintf("console.%d.log", h.boots))
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	nspawn, err := exec.LookPath("systemd-nspawn")
	if err != nil {
		return err
	}
	// The shell joins the container's cgroup(s) and execs nspawn, so nspawn, its
	// supervisor and the payload all live under cg and nowhere else.
	wrapper := `for f in $CGPROCS; do echo $$ > "$f" || exit 1; done; exec "$@"`
	args := []string{"-c", wrapper, "hostlab-nspawn", nspawn,
		"--boot",
		"--directory=" + h.root(),
		"--machine=" + h.machine,
		"--hostname=" + h.name,
		"--network-namespace-path=/run/netns/" + h.netns,
		"--register=no", "--keep-unit", // no host systemd or machined to talk to
		"--private-users=no",
		"--resolv-conf=off", "--timezone=off", "--link-journal=no",
		"--console=read-only",
	}
	cmd := exec.Command("/bin/sh", args...)
	cmd.Env = append(os.Environ(), "CGPROCS="+strings.Join(cg.procsFiles(), " "))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	cmd.Dir = "/"
	if err := cmd.Start(); err != nil {
		_ = cg.destroy(5 * time.Second)
		return fmt.Errorf("host %s: start systemd-nspawn: %w", h.name, err)
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	h.cmd, h.done = cmd, done
	var st unix.Stat_t
	if err := unix.Stat(h.root(), &st); err == nil {
		h.lockFile = fmt.Sprintf("/run/systemd/nspawn/locks/inode-%d:%d", st.Dev, st.Ino)
	}

	// Find the container's PID 1: nspawn's child once it has exec'd systemd.
	deadline := time.Now().Add(30 * time.Second)
	for {
		if pid := containerInit(cmd.Process.Pid); pid > 0 {
			h.pid1 = pid
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("host %s: systemd-nspawn exited (%v) before the container started; %s:\n%s",
				h.name, cmd.ProcessState, logPath, tailFile(logPath, 20))
		case <-ctx.Done():
			return fmt.Errorf("host %s: waiting for the container to start: %w", h.name, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("host %s: no container systemd after 30s; %s:\n%s", h.name, logPath, tailFile(logPath, 20))
		}
	}
}

// containerInit returns the child of nspawn that runs systemd, or 0.
func containerInit(nspawn int) int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", nspawn))
	for _, t := range tasks {
		data, _ := os.ReadFile(t)
		for _, f := range strings.Fields(string(data)) {
			pid, err := strconv.Atoi(f)
			if err != nil {
				continue
			}
			exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
			if strings.HasSuffix(exe, "/systemd") {
				return pid
			}
		}
	}
	return 0
}

// bootTimeout bounds one boot (cloud-init included); a hung boot fails instead of
// eating the test's whole deadline.
const bootTimeout = 3 * time.Minute

// bootLocked starts the container and waits until it has booted. h.mu held.
func (h *Host) bootLocked(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, bootTimeout)
	defer cancel()
	if err := h.startLocked(ctx); err != nil {
		return err
	}
	return h.waitBootedLocked(ctx)
}

// stopLocked kills the container hard: nspawn, the container's PID 1 and every
// process in its cgroup, then removes the cgroup. The disk stays. h.mu held.
func (h *Host) stopLocked() error {
	var errs []error
	if h.cmd != nil {
		_ = h.cmd.Process.Kill()
	}
	if h.pid1 > 0 {
		_ = syscall.Kill(h.pid1, syscall.SIGKILL)
	}
	if h.cg != nil {
		if err := h.cg.destroy(15 * time.Second); err != nil {
			errs = append(errs, err)
		}
	}
	if h.cmd != nil {
		select {
		case <-h.done:
		case <-time.After(15 * time.Second):
			errs = append(errs, fmt.Errorf("host %s: systemd-nspawn (pid %d) did not exit after SIGKILL", h.name, h.cmd.Process.Pid))
		}
	}
	h.cmd, h.done, h.pid1, h.cg = nil, nil, 0, nil
	if h.lockFile != "" {
		_ = os.Remove(h.lockFile)
		h.lockFile = ""
	}
	// nspawn's per-machine propagation dir in the host's /run.
	_ = os.Remove(filepath.Join("/run/systemd/nspawn/propagate", h.machine))
	return errors.Join(errs...)
}

// Exec runs a command inside the container (all of PID 1's namespaces, its root and
// working directory) and returns its combined output.
func (h *Host) Exec(ctx context.Context, args ...string) (string, error) {
	h.mu.Lock()
	pid := h.pid1
	h.mu.Unlock()
	return h.execPID(ctx, pid, args...)
}

func (h *Host) execPID(ctx context.Context, pid int, args ...string) (string, error) {
	if pid == 0 {
		return "", fmt.Errorf("host %s is not running", h.name)
	}
	if len(args) == 0 {
		return "", errors.New("hostlab: Exec: no command")
	}
	cmd := exec.CommandContext(ctx, "nsenter", append([]string{"-t", strconv.Itoa(pid), "-a", "--"}, args...)...)
	cmd.Env = []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"HOME=/root", "LANG=C.UTF-8", "TERM=dumb", "SYSTEMD_PAGER=", "SYSTEMD_COLORS=0",
	}
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return string(out), fmt.Errorf("host %s: %s: %w: %s", h.name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return string(out), nil
}

// Systemctl runs systemctl inside the container.
func (h *Host) Systemctl(ctx context.Context, args ...string) (string, error) {
	return h.Exec(ctx, append([]string{"systemctl", "--no-pager"}, args...)...)
}

// WaitBooted waits until the container's systemd has finished booting
// (is-system-running --wait). "degraded" is accepted; its failed units are logged.
func (h *Host) WaitBooted(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.waitBootedLocked(ctx)
}

func (h *Host) waitBootedLocked(ctx context.Context) error {
	pid, done := h.pid1, h.done
	if pid == 0 {
		return fmt.Errorf("host %s is not running", h.name)
	}
	for {
		out, _ := h.execPID(ctx, pid, "systemctl", "is-system-running", "--wait")
		state := lastLine(out)
		switch state {
		case "running":
			return nil
		case "degraded":
			failed, _ := h.execPID(ctx, pid, "systemctl", "--no-pager", "--failed", "--plain", "--no-legend")
			h.lab.logf("hostlab: host %s booted degraded; failed units:\n%s", h.name, strings.TrimSpace(failed))
			return nil
		case "maintenance", "stopping":
			return fmt.Errorf("host %s: system is %s", h.name, state)
		}
		// Not yet reachable ("offline" or no bus yet: systemd has not set up its socket).
		select {
		case <-done:
			return fmt.Errorf("host %s: systemd-nspawn exited while booting:\n%s", h.name, h.consoleTail())
		case <-ctx.Done():
			return fmt.Errorf("host %s: waiting for boot (%q): %w; console:\n%s", h.name, strings.TrimSpace(out), ctx.Err(), h.consoleTail())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

func (h *Host) consoleTail() string {
	return tailFile(filepath.Join(h.dir, fmt.Sprintf("console.%d.log", h.boots)), 20)
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// WaitCloudInit waits for cloud-init to finish and fails unless its status is done.
func (h *Host) WaitCloudInit(ctx context.Context) error {
	out, err := h.Exec(ctx, "cloud-init", "status", "--wait", "--long")
	if err != nil || !strings.Contains(out, "status: done") {
		return fmt.Errorf("host %s: cloud-init did not finish cleanly: %v\n%s", h.name, err, strings.TrimSpace(out))
	}
	return nil
}
