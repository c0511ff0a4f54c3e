package audit_test

import (
	"strings"
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestMonitorUserIsNotALockUser: the monitoring user (no key, no channel) reaches no lock, so
// the audit neither counts it among the lock users nor reports the cluster unsafe for it.
func TestMonitorUserIsNotALockUser(t *testing.T) {
	c := redistest.StartKit(t, redistest.Options{Masters: 3, Monitor: true})
	rep := run(t, target(c))
	if !rep.Safe {
		t.Fatalf("a cluster with the monitoring user reported unsafe:\n%s", strings.Join(rep.Problems, "\n"))
	}
	for _, m := range rep.Masters {
		for _, u := range m.LockUsers {
			if u.Name == redistest.MonitorUser {
				t.Errorf("master %s: the monitoring user is listed as a lock user", m.Endpoint)
			}
		}
	}
}
