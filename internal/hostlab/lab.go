//go:build linux

package hostlab

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// HostSpec describes one host.
type HostSpec struct {
	Name     string // [a-z0-9-], unique, at most 32 characters
	Address  string // an IPv4 address in the lab subnet; "" = .11, .12, ... in order
	UserData string // cloud-init user-data, written unchanged to the NoCloud seed
}

// Options configure a lab.
type Options struct {
	Hosts   []HostSpec
	Clients int       // client namespaces; 1 when zero
	Dir     string    // parent of the lab's work dir; t.TempDir() (Start) or os.TempDir() (New)
	Subnet  string    // "10.213.X.0/24" style /24; a per-lab one when empty
	Log     io.Writer // progress and console excerpts; t.Log (Start) or discarded (New)
	// NoBoot creates the network and the hosts' addresses but boots no host: each waits
	// for Provision, as a cloud instance waits for its user-data (which may need the
	// addresses, or a client namespace to run terraform in, first).
	NoBoot bool
}

// Lab is a set of hosts and client namespaces on one private bridge.
type Lab struct {
	id        string
	dir       string
	subnet    string
	subnetNet *net.IPNet
	prefix    string // first three octets with the trailing dot
	image     string // lower rootfs
	cg        cgroupRoots
	log       io.Writer
	logMu     sync.Mutex

	switchNS string
	clientNS []string
	hosts    []*Host

	mu        sync.Mutex
	netns     []string // created, for Close
	clientFDs []int
	closed    bool
	dials     sync.WaitGroup

	netMu sync.Mutex
	parts partitions

	closeOnce sync.Once
	closeErr  error
}

// UnavailableError says this machine cannot run hosts (not an error in the lab).
type UnavailableError struct{ Reason string }

func (e *UnavailableError) Error() string { return "hostlab: cannot run hosts here: " + e.Reason }

func unavailable(format string, args ...any) error {
	return &UnavailableError{Reason: fmt.Sprintf(format, args...)}
}

// Start creates a lab for a test and removes it in t.Cleanup. When the machine cannot
// run hosts (not root, no systemd-nspawn, network namespaces or overlayfs) the test is
// skipped with the reason, or fails when REDLOCK_REQUIRE_HOSTS=1.
func Start(t testing.TB, opts Options) *Lab {
	t.Helper()
	if opts.Dir == "" {
		opts.Dir = t.TempDir()
	}
	if opts.Log == nil {
		opts.Log = testWriter{t}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	l, err := New(ctx, opts)
	if err != nil {
		var u *UnavailableError
		if errors.As(err, &u) {
			if os.Getenv("REDLOCK_REQUIRE_HOSTS") != "1" {
				t.Skipf("%v (REDLOCK_REQUIRE_HOSTS=1 makes this a failure)", err)
			}
			t.Fatalf("%v (REDLOCK_REQUIRE_HOSTS=1)", err)
		}
		t.Fatalf("hostlab: %v", err)
	}
	t.Cleanup(func() {
		if err := l.Close(); err != nil {
			t.Errorf("hostlab: close: %v", err)
		}
	})
	return l
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

var labCounter atomic.Int64

var hostNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?$`)

// Preflight reports why this machine cannot run hosts, or nil.
func Preflight() error {
	if os.Geteuid() != 0 {
		return unavailable("needs root (network namespaces, mounts, cgroups)")
	}
	for _, tool := range []string{"systemd-nspawn", "ip", "nft", "nsenter"} {
		if _, err := exec.LookPath(tool); err != nil {
			return unavailable("%s is not installed: run scripts/deps.sh", tool)
		}
	}
	if _, err := os.Stat("/proc/self/ns/net"); err != nil {
		return unavailable("no network namespaces: %v", err)
	}
	fss, err := os.ReadFile("/proc/filesystems")
	if err != nil || !strings.Contains(string(fss), "\toverlay\n") {
		_ = exec.Command("modprobe", "overlay").Run()
		if fss, err = os.ReadFile("/proc/filesystems"); err != nil || !strings.Contains(string(fss), "\toverlay\n") {
			return unavailable("the kernel has no overlayfs")
		}
	}
	if _, err := detectCgroups(); err != nil {
		return unavailable("%v", err)
	}
	return nil
}

// New creates a lab outside a test: builds or reuses the image, creates the network,
// boots every host and waits until each has finished booting (which includes
// cloud-init: cloud-init.target is part of multi-user.target). The caller must Close it.
func New(ctx context.Context, opts Options) (_ *Lab, err error) {
	if err := Preflight(); err != nil {
		return nil, err
	}
	if opts.Clients == 0 {
		opts.Clients = 1
	}
	if opts.Clients < 0 || opts.Clients > 40 {
		return nil, fmt.Errorf("hostlab: Clients %d out of range 1..40", opts.Clients)
	}
	if len(opts.Hosts) == 0 || len(opts.Hosts) > 150 {
		return nil, fmt.Errorf("hostlab: %d hosts (want 1..150)", len(opts.Hosts))
	}
	reapStale(opts.Log)
	n := labCounter.Add(1)
	l := &Lab{id: fmt.Sprintf("%d-%d", os.Getpid(), n), log: opts.Log}
	if l.log == nil {
		l.log = io.Discard
	}
	l.parts.reset()
	if l.cg, err = detectCgroups(); err != nil {
		return nil, unavailable("%v", err)
	}
	if opts.Subnet == "" {
		opts.Subnet = fmt.Sprintf("10.213.%d.0/24", 16+(os.Getpid()*7+int(n))%224)
	}
	ip, ipnet, err := net.ParseCIDR(opts.Subnet)
	if err != nil || ip.To4() == nil || !ip.Equal(ipnet.IP) {
		return nil, fmt.Errorf("hostlab: Subnet %q is not an IPv4 network like 10.213.40.0/24", opts.Subnet)
	}
	if ones, _ := ipnet.Mask.Size(); ones != 24 {
		return nil, fmt.Errorf("hostlab: Subnet %q: only /24 is supported", opts.Subnet)
	}
	l.subnet, l.subnetNet = opts.Subnet, ipnet
	o := ipnet.IP.To4()
	l.prefix = fmt.Sprintf("%d.%d.%d.", o[0], o[1], o[2])

	parent := opts.Dir
	if parent == "" {
		parent = os.TempDir()
	}
	l.dir = filepath.Join(parent, "hostlab-"+l.id)
	if strings.ContainsAny(l.dir, ",:\\ \n") { // overlay mount options cannot quote them
		return nil, fmt.Errorf("hostlab: work dir %q: no commas, colons, backslashes or spaces, please", l.dir)
	}
	if err := os.MkdirAll(l.dir, 0o755); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			if cerr := l.Close(); cerr != nil {
				err = fmt.Errorf("%w (and cleaning up: %v)", err, cerr)
			}
		}
	}()

	// Validate the hosts before creating anything.
	used := map[string]string{}
	for i := 0; i < opts.Clients; i++ {
		used[l.ClientAddress(i)] = fmt.Sprintf("client %d", i)
	}
	names := map[string]bool{}
	for i, spec := range opts.Hosts {
		if !hostNameRE.MatchString(spec.Name) || names[spec.Name] {
			return nil, fmt.Errorf("hostlab: host name %q: want a unique [a-z0-9-] name of at most 32 characters", spec.Name)
		}
		names[spec.Name] = true
		addr := spec.Address
		if addr == "" {
			addr = fmt.Sprintf("%s%d", l.prefix, 11+i)
		}
		if ip := net.ParseIP(addr).To4(); !l.inSubnet(addr) || ip[3] < 2 || ip[3] > 254 {
			return nil, fmt.Errorf("hostlab: host %s: address %q is not a usable address in %s (.2-.254, not .1)", spec.Name, addr, l.subnet)
		}
		if other, ok := used[addr]; ok {
			return nil, fmt.Errorf("hostlab: host %s: address %s is taken by %s", spec.Name, addr, other)
		}
		used[addr] = "host " + spec.Name
		l.hosts = append(l.hosts, &Host{
			lab: l, index: i, name: spec.Name, addr: addr, userData: spec.UserData,
			netns:   fmt.Sprintf("hostlab-%s-%s", l.id, spec.Name),
			machine: fmt.Sprintf("hostlab-%s-%s", l.id, spec.Name),
			dir:     filepath.Join(l.dir, spec.Name),
		})
	}

	start := time.Now()
	if l.image, err = ensureImage(ctx, l.logf); err != nil {
		return nil, err
	}

	l.switchNS = "hostlab-" + l.id + "-switch"
	if err := l.createSwitch(ctx); err != nil {
		return nil, unavailable("cannot create a network namespace with a bridge: %v", err)
	}
	for i := 0; i < opts.Clients; i++ {
		ns := fmt.Sprintf("hostlab-%s-client%d", l.id, i)
		l.clientNS = append(l.clientNS, ns)
		if err := l.attach(ctx, ns, fmt.Sprintf("c%d", i), l.ClientAddress(i)); err != nil {
			return nil, err
		}
		fd, err := unix.Open("/run/netns/"+ns, unix.O_RDONLY|unix.O_CLOEXEC, 0)
		if err != nil {
			return nil, err
		}
		l.mu.Lock()
		l.clientFDs = append(l.clientFDs, fd)
		l.mu.Unlock()
	}
	for _, h := range l.hosts {
		if err := l.attach(ctx, h.netns, fmt.Sprintf("h%d", h.index), h.addr); err != nil {
			return nil, err
		}
	}
	netDone := time.Now()

	if opts.NoBoot {
		l.logf("hostlab: network for %d hosts on %s (not booted), work dir %s", len(l.hosts), l.subnet, l.dir)
		return l, nil
	}
	// Boot every host in parallel.
	if err := errors.Join(l.eachHostLocked(func(h *Host) error { return h.bootFreshLocked(ctx, h.userData) })...); err != nil {
		return nil, err
	}
	l.logf("hostlab: %d hosts booted in %v (network %v) on %s, work dir %s", len(l.hosts),
		time.Since(netDone).Round(10*time.Millisecond), netDone.Sub(start).Round(time.Millisecond), l.subnet, l.dir)
	return l, nil
}

// eachHost runs f on every host (i its index) at once and returns their errors in the
// order of the hosts.
func (l *Lab) eachHost(f func(i int, h *Host) error) []error {
	errs := make([]error, len(l.hosts))
	var wg sync.WaitGroup
	for i, h := range l.hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[i] = f(i, h)
		}()
	}
	wg.Wait()
	return errs
}

// eachHostLocked is eachHost with each f under its host's lock.
func (l *Lab) eachHostLocked(f func(h *Host) error) []error {
	return l.eachHost(func(_ int, h *Host) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		return f(h)
	})
}

func (l *Lab) logf(format string, args ...any) {
	l.logMu.Lock()
	defer l.logMu.Unlock()
	fmt.Fprintf(l.log, format+"\n", args...)
}

// Host returns the host with this name, or nil.
func (l *Lab) Host(name string) *Host {
	for _, h := range l.hosts {
		if h.name == name {
			return h
		}
	}
	return nil
}

// Hosts returns the hosts in Options order.
func (l *Lab) Hosts() []*Host { return append([]*Host(nil), l.hosts...) }

// Subnet is the lab's /24, e.g. "10.213.40.0/24".
func (l *Lab) Subnet() string { return l.subnet }

// ClientNetns is the name of client namespace i (for `ip netns exec`).
func (l *Lab) ClientNetns(i int) string { return l.clientNS[i] }

// ClientAddress is the address of client namespace i: .201, .202, ...
func (l *Lab) ClientAddress(i int) string { return fmt.Sprintf("%s%d", l.prefix, 201+i) }

func (l *Lab) clientAddr(i int) (string, error) {
	if i < 0 || i >= len(l.clientNS) {
		return "", fmt.Errorf("hostlab: no client %d (lab has %d)", i, len(l.clientNS))
	}
	return l.ClientAddress(i), nil
}

// Dir is the lab's work dir (host disks and console logs).
func (l *Lab) Dir() string { return l.dir }

// Names lists the network namespaces the lab created (for leak checks).
func (l *Lab) Names() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.netns...)
}

// CgroupDirs lists the lab's cgroup directories (for leak checks).
func (l *Lab) CgroupDirs() []string {
	var out []string
	for _, r := range []string{l.cg.v1, l.cg.v2} {
		if r != "" {
			out = append(out, filepath.Join(r, "hostlab-"+l.id))
		}
	}
	return out
}

// Close stops every host hard and removes everything the lab created: processes,
// mounts, cgroups, nft tables, namespaces (with their veths and the bridge) and the
// work dir. It is safe to call more than once and after a half-failed New.
func (l *Lab) Close() error {
	l.closeOnce.Do(func() { l.closeErr = l.close() })
	return l.closeErr
}

func (l *Lab) close() error {
	errs := l.eachHostLocked(func(h *Host) error { return errors.Join(h.stopLocked(), h.unmountLocked()) })

	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.dials.Wait()
	l.mu.Lock()
	for _, fd := range l.clientFDs {
		unix.Close(fd)
	}
	l.clientFDs = nil
	names := l.netns
	l.netns = nil
	l.mu.Unlock()

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if l.switchNS != "" && contains(names, l.switchNS) {
		l.netMu.Lock()
		_ = run(ctx, "", "ip", "netns", "exec", l.switchNS, "nft", "delete", "table", "bridge", nftTable)
		l.netMu.Unlock()
	}
	// Deleting a namespace destroys its veth end, which takes the peer with it.
	for i := len(names) - 1; i >= 0; i-- {
		if err := run(ctx, "", "ip", "netns", "del", names[i]); err != nil {
			if _, serr := os.Stat("/run/netns/" + names[i]); serr == nil {
				errs = append(errs, err)
			}
		}
	}
	for _, d := range l.CgroupDirs() {
		if err := rmdirTree(d, time.Now().Add(5*time.Second)); err != nil {
			errs = append(errs, err)
		}
	}
	if l.dir != "" {
		if err := removeTree(l.dir); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
