package supervisor

import (
	"errors"
	"fmt"
	"net"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/master/hold"
)

// Address records. Clients count a master by its address, not by its data dir: a master that
// starts on an address where another data dir's master served a moment ago (a master
// replaced by hand at a new data_dir, a dir wiped and made again) would grant, from its empty
// data, locks the other one granted and that are still valid on the other masters. Each
// data dir's own records (state, clean marker) cannot see that, so every supervisor also
// keeps, per address, which data dir served there last and until when the locks it granted
// may be valid; a start on that address from any other data dir is held until then.
//
// The records live on a tmpfs (/run) and say which boot wrote them. Where none is for the
// address, no master of the kit served there in this boot since the records began (for the
// default dir: the boot, as nothing of the kit ran before it existed): the start is held
// until restart_delay after that, which covers a master that served there before a reboot.

// AddressRecordsFile is the file in the records dir that says since when its records are
// complete: "<boot-id> <boot clock ms>".
const AddressRecordsFile = "records-since"

// addressRecordsDir is where the address records are kept: c.AddressRecords, else
// /run/redlock-kit/addresses for root, else a dir of the user's own under /tmp (never
// $TMPDIR, which differs between processes: every supervisor of the machine must read the
// same records).
func addressRecordsDir(c Config) string {
	if c.AddressRecords != "" {
		return c.AddressRecords
	}
	if os.Geteuid() == 0 {
		return "/run/redlock-kit/addresses"
	}
	// The user's home from the user database (not $HOME, which differs between processes),
	// per machine (a home may be shared by several). Its records are per boot, like /run's.
	if u, err := user.LookupId(strconv.Itoa(os.Geteuid())); err == nil && u.HomeDir != "" && u.HomeDir != "/" {
		if fi, err := os.Stat(u.HomeDir); err == nil && fi.IsDir() && ownedByMe(fi) {
			return filepath.Join(u.HomeDir, ".local", "state", "redlock-kit", machineID(), "addresses")
		}
	}
	return filepath.Join("/tmp", fmt.Sprintf("redlock-kit-%d", os.Geteuid()), "addresses")
}

// ownedByMe reports whether fi is owned by this process's user.
func ownedByMe(fi os.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// addressEntry is one address's record: "v1 <address> <boot-id> <running|stopped>
// <supervisor pid> <until ms> <delay ms> <data dir>". until is when the locks the master granted may be valid
// until, on the boot clock (for a running master: as of the last rewrite).
type addressEntry struct {
	boot    string
	running bool
	pid     int
	untilMS int64
	delayMS int64
	dir     string
}

// addressFileName is the record's file name for addr ("127.0.0.11_7379", "__1_7379").
func addressFileName(addr string) string {
	return strings.NewReplacer(":", "_", "[", "", "]", "", "%", "_", "/", "_").Replace(canonicalAddr(addr))
}

// canonicalAddr spells addr's host as its IP does ("::1" for "0:0::1"); names stay as given.
func canonicalAddr(addr string) string {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(host); ip != nil {
		host = ip.String()
	}
	return net.JoinHostPort(host, port)
}

// overlaps reports whether a client of a could have reached a server listening on b (the
// same port, and the same host or either a wildcard).
func overlaps(a, b string) bool {
	ha, pa, errA := net.SplitHostPort(canonicalAddr(a))
	hb, pb, errB := net.SplitHostPort(canonicalAddr(b))
	if errA != nil || errB != nil || pa != pb {
		return errA != nil || errB != nil // unreadable: assume the worst
	}
	wild := func(h string) bool { ip := net.ParseIP(h); return ip != nil && ip.IsUnspecified() }
	return ha == hb || wild(ha) || wild(hb)
}

// ensureAddressRecords makes the records dir (0700, owned by this user, not a symlink) and
// its records-since file, and returns when the records began (boot clock ms).
func ensureAddressRecords(dir string, clock clockPair) (sinceMS int64, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return 0, err
	}
	// The dir and its parent: this user's own, real directories that nobody else may write
	// (another user could otherwise rename the records away, or keep this user out of them).
	for _, d := range []string{dir, filepath.Dir(dir)} {
		fi, err := os.Lstat(d)
		if err != nil {
			return 0, err
		}
		if !fi.IsDir() || !ownedByMe(fi) || fi.Mode().Perm()&0o022 != 0 {
			return 0, fmt.Errorf("%s is not a directory of this user's own that only it may write (remove it)", d)
		}
	}
	path := filepath.Join(dir, AddressRecordsFile)
	b, err := os.ReadFile(path)
	if err == nil {
		f := strings.Fields(string(b))
		if len(f) == 2 && f[0] == bootID() {
			if ms, ok := boundedMS(f[1], clock); ok {
				return ms, nil
			}
			return 0, fmt.Errorf("%s: %q is not a boot clock time of this boot: remove the file", path, strings.TrimSpace(string(b)))
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return 0, err
	}
	// Made in this boot (or left from an earlier one): nothing of the kit served in this boot
	// before the dir existed, so the records are complete since the boot.
	if err := replaceFile(path, fmt.Appendf(nil, "%s 0\n", bootID()), 0o600, false); err != nil {
		return 0, err
	}
	return 0, nil
}

// boundedMS parses a boot clock time that is no later than now plus the largest delay.
func boundedMS(s string, clock clockPair) (int64, bool) {
	if len(s) > 19 {
		return 0, false
	}
	ms, err := strconv.ParseInt(s, 10, 64)
	// The lower bound keeps ms*1e6 within 64 bits (about 19 years before the boot).
	if err != nil || ms > clock.nowMS()+hold.MaxRestartDelay.Milliseconds() || ms < -hold.MaxRestartDelay.Milliseconds()*1000 {
		return 0, false
	}
	return ms, true
}

// readAddressEntries returns this boot's records of addresses that overlap addr.
// unreadable names a record that could not be read (it counts as a master that may have
// served until now).
func readAddressEntries(dir, addr string, clock clockPair) (entries []addressEntry, unreadable string) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, "" // no records yet (addressHold makes the dir before it reads)
	} else if err != nil {
		return nil, err.Error()
	}
	_, port, _ := net.SplitHostPort(addr)
	for _, de := range des {
		name := de.Name()
		if name == AddressRecordsFile || strings.HasPrefix(name, ".") || !strings.HasSuffix(name, "_"+port) {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			unreadable = filepath.Join(dir, name) + ": " + err.Error()
			continue
		}
		f := strings.SplitN(strings.TrimSuffix(string(b), "\n"), " ", 8)
		if len(f) != 8 || f[0] != "v1" {
			unreadable = filepath.Join(dir, name) + ": not a record"
			continue
		}
		if f[2] != bootID() || !overlaps(f[1], addr) {
			continue
		}
		e := addressEntry{boot: f[2], running: f[3] == "running", dir: f[7]}
		var ok1, ok2 bool
		e.untilMS, ok1 = boundedMS(f[5], clock)
		delay, err := strconv.ParseInt(f[6], 10, 64)
		ok2 = err == nil && delay > 0 && delay <= hold.MaxRestartDelay.Milliseconds()
		e.delayMS = delay
		if e.pid, err = strconv.Atoi(f[4]); err != nil || !ok1 || !ok2 || (f[3] != "running" && f[3] != "stopped") {
			unreadable = filepath.Join(dir, name) + ": values out of bounds"
			continue
		}
		entries = append(entries, e)
	}
	return entries, unreadable
}

// addressHold tells how long a master of dataDir starting on c.Addr now must wait for masters
// of other data dirs that served on that address (the address records). ownRecords is true
// when dataDir's own records say a master ran there (they then cover its own past).
func addressHold(c Config, dataDir string, now time.Time, ownRecords bool) (until time.Time, hold bool, why string) {
	clock, err := readClockPair()
	if err != nil {
		return now.Add(c.RestartDelay), true, "the address records cannot be read: " + err.Error()
	}
	dir := addressRecordsDir(c)
	since, err := ensureAddressRecords(dir, clock)
	if err != nil {
		return now.Add(c.RestartDelay), true, "the address records (" + dir + ") cannot be used: " + err.Error()
	}
	toTime := func(ms int64) time.Time { return clock.timeAtOrAfter(ms) }
	entries, unreadable := readAddressEntries(dir, c.Addr, clock)
	if unreadable != "" {
		return now.Add(c.RestartDelay), true, "an address record cannot be read (" + unreadable + ")"
	}
	mine := false
	for _, e := range entries {
		self := samePath(e.dir, dataDir)
		mine = mine || self
		if self && ownRecords {
			continue
		}
		var u time.Time
		var w string
		switch {
		case e.running && isSupervisorProcess(e.pid, e.dir):
			u, w = now.Add(max(c.RestartDelay, time.Duration(e.delayMS)*time.Millisecond)), "the master of "+e.dir+" serves on "+c.Addr+" now"
		case e.running:
			u, w = now.Add(max(c.RestartDelay, time.Duration(e.delayMS)*time.Millisecond)),
				"the master of "+e.dir+" served on "+c.Addr+" until its supervisor died: when it stopped is unknown"
		default:
			u, w = toTime(e.untilMS), "the master of "+e.dir+" served on "+c.Addr+"; locks it granted may be valid until then"
		}
		if self {
			w = "the records of this data dir are gone, but its master served on " + c.Addr + " in this boot"
		}
		if u.After(now) && u.After(until) {
			until, hold, why = u, true, w
		}
	}
	if !mine && !ownRecords {
		// No master of the kit served on the address since the records began.
		if u := toTime(since).Add(c.RestartDelay); u.After(now) && u.After(until) {
			until, hold, why = u, true, fmt.Sprintf("a first start on %s within restart_delay of when the address records "+
				"began (%s: a master there before then, before a reboot too, is unknown)", c.Addr, filepath.Join(dir, AddressRecordsFile))
		}
	}
	return until, hold, why
}

// writeAddressEntry records that the master of s.dir served (running) or stopped on its
// address, and until when the locks it granted may be valid.
func (s *supervisor) writeAddressEntry() error {
	if s.st.LastAlive.IsZero() && s.st.RedisPID == 0 {
		return nil // never served
	}
	clock, err := readClockPair()
	if err != nil {
		return err
	}
	dir := addressRecordsDir(s.cfg)
	if _, err := ensureAddressRecords(dir, clock); err != nil {
		return err
	}
	state, until := "stopped", later(s.st.LastAlive.Add(s.cfg.RestartDelay), s.st.HoldFloor)
	if s.st.RedisPID != 0 && s.st.Status != StatusHolding && s.st.Status != StatusStopped {
		state, until = "running", later(time.Now().Add(s.cfg.RestartDelay), s.st.HoldFloor)
	}
	body := fmt.Sprintf("v1 %s %s %s %d %d %d %s\n", canonicalAddr(s.cfg.Addr), bootID(), state, os.Getpid(),
		clock.msAtOrAfter(until), delayMS(max(s.cfg.RestartDelay, s.st.LargestDelay)), s.dir)
	return replaceFile(filepath.Join(dir, addressFileName(s.cfg.Addr)), []byte(body), 0o600, false)
}

// ReleaseAddress records that the master of dataDir on addr, stopped, granted no lock valid
// after validUntil (Destroy measured it): a master of another data dir may start there from
// then on. It changes only a record that names dataDir, and never raises one.
func ReleaseAddress(dataDir, addr string, validUntil time.Time) error {
	c, err := LoadConfig(dataDir)
	if err != nil {
		c = Config{} // its files are gone: the default records dir
	}
	clock, err := readClockPair()
	if err != nil {
		return err
	}
	dir := addressRecordsDir(c)
	path := filepath.Join(dir, addressFileName(addr))
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return err
	}
	f := strings.SplitN(strings.TrimSuffix(string(b), "\n"), " ", 8)
	if len(f) != 8 || f[0] != "v1" || f[2] != bootID() || !samePath(f[7], dataDir) {
		return nil
	}
	if running := f[3] == "running" && isSupervisorProcess(atoi(f[4]), f[7]); running {
		return nil
	}
	until := clock.msAtOrAfter(validUntil)
	if old, ok := boundedMS(f[5], clock); ok && old <= until {
		return nil
	}
	f[3], f[5] = "stopped", strconv.FormatInt(until, 10)
	return replaceFile(path, []byte(strings.Join(f, " ")+"\n"), 0o600, false)
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// AddressPending reports whether a master of another data dir than dataDir may still have
// locks valid on addr, by the default address records (those the provider's supervisors
// keep): it runs there, or its record's until has not passed. A port picked for a new master
// avoids such an address, whose start would be held.
func AddressPending(dataDir, addr string) bool {
	return addressPendingIn(addressRecordsDir(Config{}), dataDir, addr)
}

func addressPendingIn(records, dataDir, addr string) bool {
	clock, err := readClockPair()
	if err != nil {
		return false
	}
	entries, unreadable := readAddressEntries(records, addr, clock)
	if unreadable != "" {
		return true
	}
	for _, e := range entries {
		if !samePath(e.dir, dataDir) && (e.running || clock.timeAtOrAfter(e.untilMS).After(clock.now)) {
			return true
		}
	}
	return false
}

// maxAddressHold bounds what a hold for the address adds to the state's largest delay
// (every record's until is bounded by it too).
const maxAddressHold = hold.MaxRestartDelay
