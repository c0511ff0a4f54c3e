package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestAddressRecordsSpelling: one file per address whatever its spelling, and a wildcard
// bind overlaps every host on its port.
func TestAddressRecordsSpelling(t *testing.T) {
	for _, tc := range []struct{ a, b string }{
		{"127.0.0.11:7379", "127.0.0.11:7379"},
		{"[::1]:7379", "[0:0::1]:7379"},
	} {
		if addressFileName(tc.a) != addressFileName(tc.b) {
			t.Errorf("%s and %s have two records: %s, %s", tc.a, tc.b, addressFileName(tc.a), addressFileName(tc.b))
		}
	}
	for _, tc := range []struct {
		a, b string
		want bool
	}{
		{"127.0.0.11:7379", "127.0.0.11:7379", true},
		{"127.0.0.11:7379", "127.0.0.12:7379", false},
		{"127.0.0.11:7379", "127.0.0.11:7380", false},
		{"0.0.0.0:7379", "127.0.0.12:7379", true},
		{"127.0.0.12:7379", "[::]:7379", true},
	} {
		if got := overlaps(tc.a, tc.b); got != tc.want {
			t.Errorf("overlaps(%s, %s) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

// TestAddressPending: a port whose record is another data dir's, with an until still to
// come, is pending (a new master there would be held); the dir's own record, or one whose
// until has passed, is not. A record that cannot be read is pending.
func TestAddressPending(t *testing.T) {
	records := testAddressRecords(t)
	clock, err := readClockPair()
	if err != nil {
		t.Fatal(err)
	}
	const addr = "127.0.0.1:7379"
	write := func(dir string, until time.Time) {
		body := fmt.Sprintf("v1 %s %s stopped 1 %d 31000 %s\n", addr, bootID(), clock.msAtOrAfter(until), dir)
		if err := os.WriteFile(filepath.Join(records, addressFileName(addr)), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	mine, other := t.TempDir(), t.TempDir()
	write(other, time.Now().Add(time.Minute))
	if !addressPendingIn(records, mine, addr) {
		t.Error("another data dir's record with a minute to go: not pending")
	}
	if addressPendingIn(records, other, addr) {
		t.Error("the data dir's own record: pending")
	}
	write(other, time.Now().Add(-time.Second))
	if addressPendingIn(records, mine, addr) {
		t.Error("a record whose until has passed: pending")
	}
	if err := os.WriteFile(filepath.Join(records, addressFileName(addr)), []byte("garbage\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if !addressPendingIn(records, mine, addr) {
		t.Error("an unreadable record: not pending")
	}
}

// TestAddressRecordsDirMustBeOwn: a records dir whose parent others may write (a name in
// /tmp made by another user) is refused, naming it: another user could rename the records
// away. A records dir that does not exist yet has no pending address.
func TestAddressRecordsDirMustBeOwn(t *testing.T) {
	clock, err := readClockPair()
	if err != nil {
		t.Fatal(err)
	}
	parent := filepath.Join(t.TempDir(), "shared")
	if err := os.Mkdir(parent, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(parent, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	if _, err := ensureAddressRecords(filepath.Join(parent, "addresses"), clock); err == nil || !strings.Contains(err.Error(), parent) {
		t.Errorf("a records dir in a dir others may write: err = %v, want one naming %s", err, parent)
	}
	if err := os.Chmod(parent, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := ensureAddressRecords(filepath.Join(parent, "addresses"), clock); err != nil {
		t.Errorf("a records dir of this user's own: %v", err)
	}
	if addressPendingIn(filepath.Join(t.TempDir(), "none"), t.TempDir(), "127.0.0.1:7379") {
		t.Error("no records dir yet (a fresh boot): pending")
	}
}
