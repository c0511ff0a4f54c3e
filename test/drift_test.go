package test

import (
	"strings"
	"testing"

	"github.com/gruntwork-io/terratest/modules/terraform"
)

// Someone weakens durability behind Terraform's back; the next plan shows it and the
// next apply puts it back.
func TestDriftIsPlannedAndRestored(t *testing.T) {
	t.Parallel()
	d := deployLocalFive(t, "5s")
	admin := d.admin(t, 2)

	if err := admin.ConfigSet(t.Context(), "appendfsync", "everysec").Err(); err != nil {
		t.Fatalf("CONFIG SET appendfsync everysec: %v", err)
	}

	plan := terraform.InitAndPlan(t, d.opts)
	if !strings.Contains(plan, "appendfsync") || !strings.Contains(plan, "everysec") {
		t.Fatalf("plan does not show the appendfsync drift:\n%s", plan)
	}
	if code := terraform.PlanExitCode(t, d.opts); code != 2 {
		t.Fatalf("plan -detailed-exitcode = %d with drift, want 2 (changes)", code)
	}

	terraform.Apply(t, d.opts)
	got, err := admin.ConfigGet(t.Context(), "appendfsync").Result()
	if err != nil || got["appendfsync"] != "always" {
		t.Fatalf("after apply appendfsync = %q (%v), want always", got["appendfsync"], err)
	}
	d.validateSafe(t) // SAFE after the repair
	if code := terraform.PlanExitCode(t, d.opts); code != 0 {
		t.Fatalf("plan after repair = %d, want 0", code)
	}
}
