package master

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestDefaultMargin(t *testing.T) {
	for ttl, want := range map[time.Duration]time.Duration{
		2 * time.Second:   time.Second,
		30 * time.Second:  time.Second,
		200 * time.Second: 2*time.Second + 102*time.Millisecond,
	} {
		if got := DefaultMargin(ttl); got != want || got < MinMargin(ttl) {
			t.Errorf("DefaultMargin(%s) = %s, want %s (>= MinMargin %s)", ttl, got, want, MinMargin(ttl))
		}
	}
}

func TestLongHold(t *testing.T) {
	for _, tc := range []struct {
		spec Spec
		long bool
		want string
	}{
		{spec: Spec{}, long: false},
		{spec: Spec{MaxLockTTL: LongHoldTTL}, long: false},
		{spec: Spec{MaxLockTTL: LongHoldTTL + time.Second}, long: true, want: "restart_delay = 5m4.112s"},
		{spec: Spec{MaxLockTTL: 100000 * time.Hour}, long: true, want: "about 4208.3 days"},
		{spec: Spec{MaxLockTTL: 30 * time.Second, RestartDelay: 3 * time.Hour}, long: true, want: "about 3.0 hours"},
	} {
		_, detail, long := tc.spec.LongHold()
		if long != tc.long || !strings.Contains(detail, tc.want) {
			t.Errorf("LongHold(%+v) = %v, %q; want %v and %q", tc.spec, long, detail, tc.long, tc.want)
		}
	}
}

// TestCheckMonitorUser: the monitoring user needs a valid name and a password of its own;
// none at all is fine.
func TestCheckMonitorUser(t *testing.T) {
	good := Spec{Bind: "127.0.0.1", Port: 6379, DataDir: "/d", AdminPassword: "admin-password-0123456789",
		LockPassword: "lock-password-0123456789"}.WithDefaults()
	for _, tc := range []struct {
		name, user, password, wantField string
	}{
		{"no monitoring user", "", "", ""},
		{"default name", "", "monitor-password-0123456789", ""},
		{"own name", "prom", "monitor-password-0123456789", ""},
		{"short password", "", "short", "monitor_password"},
		{"admin's password", "", "admin-password-0123456789", "monitor_password"},
		{"lock user's password", "", "lock-password-0123456789", "monitor_password"},
		{"lock user's name", "redlock", "monitor-password-0123456789", "monitor_user"},
		{"admin's name", "default", "monitor-password-0123456789", "monitor_user"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := good
			s.MonitorUser, s.MonitorPassword = tc.user, tc.password
			s = s.WithDefaults()
			var fields []string
			for _, fe := range FieldErrors(s.Check()) {
				fields = append(fields, fe.Field)
			}
			switch {
			case tc.wantField == "" && len(fields) > 0:
				t.Errorf("Check: %v, want no error", s.Check())
			case tc.wantField != "" && (len(fields) != 1 || fields[0] != tc.wantField):
				t.Errorf("Check: fields %v (%v), want exactly %s", fields, s.Check(), tc.wantField)
			}
			if tc.password != "" && s.MonitorUser == "" {
				t.Error("WithDefaults left the monitoring user unnamed")
			}
		})
	}
}

// TestCheckTimingBoundsTheDelay: a restart delay longer than either runtime reads from disk
// (hold.MaxRestartDelay) is refused at plan time, naming restart_delay; a week is accepted.
func TestCheckTimingBoundsTheDelay(t *testing.T) {
	week := 7 * 24 * time.Hour
	for _, tc := range []struct {
		spec Spec
		bad  bool
	}{
		{spec: Spec{MaxLockTTL: 30 * time.Second, RestartDelay: week}},
		{spec: Spec{MaxLockTTL: 30 * time.Second, RestartDelay: week + time.Millisecond}, bad: true},
		{spec: Spec{MaxLockTTL: week}, bad: true}, // the default delay adds the margin
	} {
		err := tc.spec.CheckTiming()
		var fe *FieldError
		if bad := err != nil; bad != tc.bad || bad && (!errors.As(err, &fe) || fe.Field != "restart_delay") {
			t.Errorf("CheckTiming(%+v) = %v; want refused: %v (field restart_delay)", tc.spec, err, tc.bad)
		}
	}
}

// TestRestartDelayWholeMilliseconds: a TTL with a fraction of a millisecond gives a restart
// delay rounded up to a whole millisecond, the unit of master.conf, supervisor.json, the
// deployment record and the provider's restart_delay_ms: each then holds at least the
// required time (before, master.conf cut 2000.5 ms to 2000 while supervisor.json said 2001).
func TestRestartDelayWholeMilliseconds(t *testing.T) {
	for _, s := range []Spec{
		{MaxLockTTL: time.Second + 500*time.Microsecond},
		{MaxLockTTL: time.Second, RestartDelay: 2*time.Second + time.Nanosecond},
		{MaxLockTTL: 1234567 * time.Microsecond, ClockDriftMargin: 100*time.Millisecond + 1},
	} {
		d := s.WithDefaults()
		need := d.MaxLockTTL + d.ClockDriftMargin
		if s.RestartDelay != 0 {
			need = max(need, s.RestartDelay)
		}
		if d.RestartDelay%time.Millisecond != 0 || d.RestartDelay < need || d.RestartDelay-need >= time.Millisecond {
			t.Errorf("%+v: restart delay %v, want %v rounded up to a whole millisecond", s, d.RestartDelay, need)
		}
	}
}
