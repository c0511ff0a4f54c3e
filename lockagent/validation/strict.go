package validation

import (
	"fmt"
	"strings"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
)

// StrictOptions tune ValidateStrict.
type StrictOptions struct {
	// Options are the run's options (Progress goes to t.Logf unless set).
	Options Options
	// AllowDegraded accepts "SAFE, degraded" (a minority of masters down, or another
	// warning) and masters the audit could not reach. Leave it false in an infrastructure
	// test: a fresh deployment that is missing masters must fail it.
	AllowDegraded bool
}

// StrictError is ValidateStrictE's error for a run that finished SAFE but not strictly:
// degraded (warnings) or with masters the audits could not reach. Report is the whole report.
type StrictError struct {
	Report *Report
	// Reasons: each warning, and each master an audit could not reach.
	Reasons []string
}

func (e *StrictError) Error() string {
	return fmt.Sprintf("validation: SAFE, degraded, and the strict pass accepts only SAFE with every master audited (StrictOptions.AllowDegraded accepts degraded):\n  - %s",
		strings.Join(e.Reasons, "\n  - "))
}

// ValidateStrict is the pass an infrastructure test wants: it validates the deployment cfg
// describes (see Run), logging the progress and the report with t.Logf, and fails the test
// (t.Fatalf) unless the verdict is SAFE with every master audited, before and after the
// contention phase, and no warning. "SAFE, degraded" fails unless opts.AllowDegraded. It
// returns the report.
func ValidateStrict(t TestingT, cfg *agentconfig.Config, opts StrictOptions) *Report {
	t.Helper()
	rep, err := ValidateStrictE(t, cfg, opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return rep
}

// ValidateStrictE is ValidateStrict without failing the test: the report (nil when the run
// could not finish) and an error unless the pass is strict: ValidateWithOptionsE's errors, or
// a *StrictError for SAFE but degraded.
func ValidateStrictE(t TestingT, cfg *agentconfig.Config, opts StrictOptions) (*Report, error) {
	t.Helper()
	rep, err := ValidateWithOptionsE(t, cfg, opts.Options)
	if err != nil || opts.AllowDegraded {
		return rep, err
	}
	if reasons := notStrict(rep); len(reasons) > 0 {
		return rep, &StrictError{Report: rep, Reasons: reasons}
	}
	return rep, nil
}

// notStrict lists why a SAFE report is not a strict pass: its warnings, and every master
// an audit could not reach, or an audit that did not run.
func notStrict(rep *Report) []string {
	reasons := append([]string(nil), rep.Warnings...)
	for _, a := range []struct {
		phase string
		rep   *audit.Report
	}{{"the audit", rep.Audit}, {"the audit after the contention phase", rep.AuditAfter}} {
		if a.rep == nil {
			reasons = append(reasons, a.phase+" did not run")
			continue
		}
		for _, m := range a.rep.Masters {
			if !m.Reachable {
				reasons = append(reasons, fmt.Sprintf("%s: not reached by %s (%s)", m.Endpoint, a.phase, m.Error))
			}
		}
	}
	return reasons
}
