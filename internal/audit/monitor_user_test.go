package audit_test

import (
	"strings"
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestMonitorUserIsNotALockUser: the monitoring user as the kit renders it (no key, no
// channel, read-only server state) reaches no lock: the audit checks it like every user, finds
// nothing it may not run, and does not report the cluster unsafe for it.
func TestMonitorUserIsNotALockUser(t *testing.T) {
	t.Parallel()
	c := redistest.StartKit(t, redistest.Options{Masters: 3, Monitor: true})
	rep := run(t, target(c))
	if !rep.Safe {
		t.Fatalf("a cluster with the monitoring user reported unsafe:\n%s", strings.Join(rep.Problems, "\n"))
	}
	for _, m := range rep.Masters {
		for _, u := range m.LockUsers {
			if u.Name == redistest.MonitorUser && (len(u.Keys) > 0 || len(u.Channels) > 0 || len(u.Dangerous) > 0 || !u.DangerousChecked) {
				t.Errorf("master %s: the monitoring user: keys %v, channels %v, dangerous %v (checked %v); want none, checked",
					m.Endpoint, u.Keys, u.Channels, u.Dangerous, u.DangerousChecked)
			}
		}
	}
}
