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
	"syscall"
	"time"
)

// MainPID returns the host-side pid of a unit's main process: systemd reports the
// pid in the container's pid namespace, which is matched against the last NSpid
// entry of each process in the container's cgroup.
func (h *Host) MainPID(ctx context.Context, unit string) (int, error) {
	h.mu.Lock()
	pid1, cg := h.pid1, h.cg
	h.mu.Unlock()
	if pid1 == 0 || cg == nil {
		return 0, fmt.Errorf("host %s is not running", h.name)
	}
	out, err := h.execPID(ctx, pid1, "systemctl", "show", "--property=MainPID", "--value", unit)
	if err != nil {
		return 0, err
	}
	inner, err := strconv.Atoi(strings.TrimSpace(out))
	if err != nil {
		return 0, fmt.Errorf("host %s: MainPID of %s: %q", h.name, unit, out)
	}
	if inner == 0 {
		return 0, fmt.Errorf("host %s: %s has no main process", h.name, unit)
	}
	pidNS, err := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", pid1))
	if err != nil {
		return 0, err
	}
	for _, p := range cg.pids() {
		if ns, _ := os.Readlink(fmt.Sprintf("/proc/%d/ns/pid", p)); ns != pidNS {
			continue
		}
		if nsPID(p) == inner {
			return p, nil
		}
	}
	return 0, fmt.Errorf("host %s: %s main pid %d (in the container) not found among its processes", h.name, unit, inner)
}

// nsPID is the pid of p in its innermost pid namespace, or 0.
func nsPID(p int) int {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "NSpid:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			n, _ := strconv.Atoi(f[len(f)-1])
			return n
		}
	}
	return 0
}

// Kill sends sig to a unit's main process (as kill -SIG would; systemd sees the death).
func (h *Host) Kill(ctx context.Context, unit string, sig syscall.Signal) error {
	pid, err := h.MainPID(ctx, unit)
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, sig); err != nil {
		return fmt.Errorf("host %s: kill -%d %s (pid %d): %w", h.name, sig, unit, pid, err)
	}
	return nil
}

// Reboot reboots cleanly: systemctl reboot inside (services stop, files are synced),
// waits for nspawn to exit, boots the same disk again and waits until it has booted.
func (h *Host) Reboot(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.shutDownLocked(ctx, "reboot"); err != nil {
		return err
	}
	return h.bootLocked(ctx)
}

// shutDownLocked runs `systemctl <verb>` (reboot or poweroff) inside the running host,
// waits for nspawn to exit and collects the host's cgroup. h.mu is held.
func (h *Host) shutDownLocked(ctx context.Context, verb string) error {
	if h.cmd == nil {
		return fmt.Errorf("host %s is not running", h.name)
	}
	done := h.done
	// The command may report an error when the container goes away under it.
	out, err := h.execPID(ctx, h.pid1, "systemctl", verb)
	select {
	case <-done:
	case <-time.After(90 * time.Second):
		return fmt.Errorf("host %s: still running 90s after systemctl %s (%v: %s)", h.name, verb, err, strings.TrimSpace(out))
	case <-ctx.Done():
		return fmt.Errorf("host %s: waiting for %s: %w", h.name, verb, ctx.Err())
	}
	return h.stopLocked() // collect the cgroup
}

// PowerOff stops the host hard, like pulling the plug: SIGKILL to nspawn, the
// container's PID 1 and every process in its cgroup, with no clean shutdown. Writes
// already in the disk's page cache survive (the overlay is not lost), unsynced
// application buffers do not. The disk is kept for Boot.
func (h *Host) PowerOff(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd == nil {
		return fmt.Errorf("host %s is not running", h.name)
	}
	return h.stopLocked()
}

// Boot boots a powered-off host from the same disk (same instance-id, so cloud-init
// runs only its per-boot modules) and waits until it has booted.
func (h *Host) Boot(ctx context.Context) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd != nil {
		return fmt.Errorf("host %s is already running", h.name)
	}
	return h.bootLocked(ctx)
}

// Running reports whether the host's container is up.
func (h *Host) Running() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.cmd != nil
}

// Provision boots a host of a NoBoot lab for the first time, with this user-data, and
// waits until it has booted (cloud-init included).
func (h *Host) Provision(ctx context.Context, userData string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.cmd != nil {
		return fmt.Errorf("host %s is already running: use Replace", h.name)
	}
	return h.bootFreshLocked(ctx, userData)
}

// ProvisionAll boots every host of a NoBoot lab at once, host i with userData[i], as
// Provision does (a cloud starts its instances side by side), and returns the hosts'
// errors joined, each naming its host.
func (l *Lab) ProvisionAll(ctx context.Context, userData []string) error {
	if len(userData) != len(l.hosts) {
		return fmt.Errorf("hostlab: ProvisionAll: %d user-data for %d hosts", len(userData), len(l.hosts))
	}
	return errors.Join(l.eachHost(func(i int, h *Host) error {
		if err := h.Provision(ctx, userData[i]); err != nil {
			return fmt.Errorf("boot %s: %w", h.name, err)
		}
		return nil
	})...)
}

// Replace stops the host hard, throws its disk away and boots a new, empty host at
// the same address with a new instance-id and this user-data (cloud-init runs afresh).
func (h *Host) Replace(ctx context.Context, userData string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.stopLocked(); err != nil {
		return err
	}
	return h.bootFreshLocked(ctx, userData)
}

// bootFreshLocked boots the host from a new, empty disk with this user-data (a new
// instance-id: cloud-init runs afresh) and waits until it has booted. h.mu is held.
func (h *Host) bootFreshLocked(ctx context.Context, userData string) error {
	h.userData = userData
	if err := h.newDisk(); err != nil {
		return err
	}
	return h.bootLocked(ctx)
}

// ReplaceWithClone shuts the host down cleanly (systemctl poweroff: services stop, files
// are synced), then boots a new host at the same address from a copy of that disk, as a
// cloud creates an instance from an image or a snapshot: every file of the old disk
// (machine-id included), a new instance-id (cloud-init runs afresh with userData), a new
// boot.
func (h *Host) ReplaceWithClone(ctx context.Context, userData string) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err := h.shutDownLocked(ctx, "poweroff"); err != nil {
		return err
	}
	if err := h.unmountLocked(); err != nil {
		return err
	}
	snapshot := filepath.Join(h.dir, "clone")
	if err := removeTree(snapshot); err != nil {
		return err
	}
	upper := filepath.Join(h.dir, fmt.Sprintf("disk%d", h.disk), "upper")
	if out, err := exec.CommandContext(ctx, "cp", "-a", upper, snapshot).CombinedOutput(); err != nil {
		return fmt.Errorf("host %s: copy the disk: %v: %s", h.name, err, strings.TrimSpace(string(out)))
	}
	h.userData = userData
	if err := h.newDiskFrom(snapshot); err != nil {
		return err
	}
	return h.bootLocked(ctx)
}
