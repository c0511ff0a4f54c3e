package validation_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

// TestValidateStrictFailsWithAMasterDown: on five real masters with one stopped, the verdict
// is "SAFE, degraded" (still exclusive) and ValidateStrict fails the test naming the stopped
// master; AllowDegraded accepts it; once the master is back, ValidateStrict passes. The
// failed dials to the stopped master go to the test's log, not to stderr.
func TestValidateStrictFailsWithAMasterDown(t *testing.T) {
	c := redistest.StartKit(t, redistest.Options{Masters: 5})
	down := c.Masters[2]
	if err := down.Shutdown(); err != nil {
		t.Fatal(err)
	}

	r := &recorder{}
	var rep *validation.Report
	r.run(func() { rep = validation.ValidateStrict(r, configFor(c), validation.StrictOptions{Options: quick}) })
	if !r.fatal || rep != nil {
		t.Fatalf("ValidateStrict with a master down did not fail the test (fatal %v):\n%s", r.fatal, r.log())
	}
	failure := strings.Join(r.errors, "\n")
	for _, want := range []string{"SAFE, degraded", down.Addr, "AllowDegraded"} {
		if !strings.Contains(failure, want) {
			t.Errorf("the failure does not say %q:\n%s", want, failure)
		}
	}
	t.Logf("one master down, ValidateStrict failed the test with:\n%s", failure)
	if !strings.Contains(r.log(), "go-redis: ") || !strings.Contains(r.log(), down.Addr) {
		t.Errorf("go-redis's failed dials to %s are not in the test's log:\n%s", down.Addr, r.log())
	}

	// The caller may accept degraded, and the error says why when it does not.
	r = &recorder{}
	r.run(func() {
		var err error
		rep, err = validation.ValidateStrictE(r, configFor(c), validation.StrictOptions{Options: quick})
		var se *validation.StrictError
		if !errors.As(err, &se) || se.Report != rep || !rep.Degraded() {
			t.Errorf("ValidateStrictE = %v, want a *StrictError with the degraded report", err)
		}
	})
	r = &recorder{}
	r.run(func() {
		rep = validation.ValidateStrict(r, configFor(c), validation.StrictOptions{Options: quick, AllowDegraded: true})
	})
	if r.fatal || rep == nil || !rep.Degraded() {
		t.Fatalf("AllowDegraded: fatal %v, report %v:\n%s", r.fatal, rep, r.log())
	}

	if err := down.Restart(); err != nil {
		t.Fatal(err)
	}
	r = &recorder{}
	r.run(func() { rep = validation.ValidateStrict(r, configFor(c), validation.StrictOptions{Options: quick}) })
	if r.fatal || len(r.errors) > 0 || rep == nil || rep.Verdict != validation.VerdictSafe || rep.Degraded() {
		t.Fatalf("ValidateStrict after the master returned: fatal %v, errors %q:\n%s", r.fatal, r.errors, r.log())
	}
	t.Logf("the master back, ValidateStrict passed: %s", rep)
}
