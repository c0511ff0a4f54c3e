package supervisor

import (
	"fmt"
	"os"
	"path/filepath"
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
