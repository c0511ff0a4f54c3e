package audit_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestDeploymentRecordBinding: the deployment record vouches for the server run and the
// config file its runtime started, nothing else. Each broken binding is UNSAFE, naming
// what is wrong; the record as the runtime wrote it is the negative control.
func TestDeploymentRecordBinding(t *testing.T) {
	c := startKit(t, redistest.Options{Masters: 3})
	ctx := context.Background()
	if rep := run(t, target(c)); !rep.Safe {
		t.Fatalf("the record as published: unsafe: %q", rep.Problems)
	}
	admin := c.Masters[1].Admin()
	for _, tc := range []struct {
		name        string
		field, to   string
		wantFinding []string
	}{
		{"a record of another server run", audit.DeploymentRunIDField, strings.Repeat("0", 40), []string{"started outside its runtime", "run 0000"}},
		{"a record naming no run", audit.DeploymentRunIDField, "", []string{"has no run_id"}},
		{"the config changed on disk", audit.DeploymentConfigDriftField, "/etc/redis.conf changed on disk since the runtime rendered it: appendfsync",
			[]string{"/etc/redis.conf", "appendfsync", "next start"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			saved, err := admin.HGet(ctx, audit.DeploymentKey, tc.field).Result()
			if err != nil && err.Error() != "redis: nil" {
				t.Fatal(err)
			}
			if err := admin.HSet(ctx, audit.DeploymentKey, tc.field, tc.to).Err(); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { admin.HSet(context.Background(), audit.DeploymentKey, tc.field, saved) })
			rep := run(t, target(c))
			all := strings.Join(rep.Problems, "\n")
			if rep.Safe {
				t.Fatalf("SAFE with %s = %q", tc.field, tc.to)
			}
			for _, w := range append(tc.wantFinding, c.Masters[1].Addr) {
				if !strings.Contains(all, w) {
					t.Errorf("problems %q lack %q", all, w)
				}
			}
		})
	}
}
