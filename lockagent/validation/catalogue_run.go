package validation

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
)

// CatalogueOptions tune CheckCatalogue.
type CatalogueOptions struct {
	// Options are the options of every validation run (Progress is ignored: each run's
	// progress is discarded, its verdict logged).
	Options Options
	// Spare is a server outside the deployment with the same users and passwords (and the
	// published restart delay), for the balancer case; that case is skipped without one.
	Spare string
}

// CaseResult is the outcome of one case of the catalogue.
type CaseResult struct {
	Name    string
	Want    Verdict
	Verdict Verdict // "" when the case was skipped or could not run
	// Finding is the first finding behind the verdict (or why the case did not run).
	Finding string
}

// String is one line of the catalogue's table.
func (r CaseResult) String() string {
	v := r.Verdict
	if v == "" {
		v = "-"
	}
	finding := r.Finding
	if len(finding) > 110 {
		finding = finding[:110] + "..."
	}
	if finding == "" {
		return fmt.Sprintf("%-13s %s", v, r.Name)
	}
	return fmt.Sprintf("%-13s %s\n              <- %s", v, r.Name, finding)
}

// CheckCatalogue proves that validation catches every case of UnsafeCatalogue on the
// deployment cfg describes. It first validates the deployment as it is, which must be
// SAFE (the negative control: a validator that says UNSAFE to everything proves nothing);
// then, for each case, it makes the change through the admin user, validates, and undoes
// the change. A case that ends SAFE fails the test (t.Errorf), as does a clean run that
// is not SAFE or a change that cannot be made or undone. It returns every outcome, the
// clean run first.
//
// It logs each outcome once (t.Logf: the verdict and the finding behind it); a caller need
// not log them again. Each case is a whole validation run, so it takes about 30 times
// Options.Duration plus the audits: about three minutes with the defaults on five local
// masters (182 s measured on the redlock-cluster module). The balancer case needs
// opts.Spare (the modules' catalogue_spare output) and is skipped without it.
//
// It changes the masters (ACL users, settings), one case at a time, and undoes each
// change: run it against a deployment of its own, never one that serves real clients.
func CheckCatalogue(t TestingT, cfg *agentconfig.Config, opts CatalogueOptions) []CaseResult {
	t.Helper()
	ctx := context.Background()
	if c, ok := t.(interface{ Context() context.Context }); ok {
		ctx = c.Context()
	}
	var endRedisLogs func()
	opts.Options.Dialer, endRedisLogs = testLogs(t, opts.Options.Dialer)
	defer endRedisLogs()
	opts.Options.Progress = io.Discard
	var out []CaseResult
	clean := CaseResult{Name: "clean deployment (negative control)", Want: VerdictSafe}
	if rep, err := Run(ctx, cfg, opts.Options); err != nil {
		clean.Finding = err.Error()
		t.Errorf("catalogue: the clean deployment could not be validated: %v", err)
	} else {
		clean.Verdict, clean.Finding = rep.Verdict, firstFinding(rep)
		if rep.Verdict != VerdictSafe {
			t.Errorf("catalogue: the clean deployment is %s, not SAFE: the catalogue needs a SAFE deployment to start from:\n%s", rep.Verdict, rep)
		}
	}
	t.Logf("catalogue: %s", clean)
	out = append(out, clean)
	if clean.Verdict != VerdictSafe {
		return out
	}
	for _, uc := range UnsafeCatalogue() {
		res := runCase(ctx, t, cfg, opts, uc)
		t.Logf("catalogue: %s", res)
		out = append(out, res)
	}
	return out
}

// runCase applies one case, validates, and undoes it.
func runCase(ctx context.Context, t TestingT, cfg *agentconfig.Config, opts CatalogueOptions, uc UnsafeCase) CaseResult {
	t.Helper()
	res := CaseResult{Name: uc.Name, Want: uc.Want}
	if uc.NeedsSpare && opts.Spare == "" {
		res.Finding = "skipped: no spare server (CatalogueOptions.Spare)"
		return res
	}
	env, err := NewCaseEnv(cfg, opts.Spare, opts.Options.Dialer)
	if err != nil {
		t.Errorf("catalogue %q: %v", uc.Name, err)
		res.Finding = err.Error()
		return res
	}
	defer env.Close()
	var undo func(context.Context) error
	var applyErr error
	apply := func() { undo, applyErr = uc.Apply(ctx, env) }
	o := opts.Options
	if uc.During {
		o.Hook = func(point string) {
			if point == "contention" && undo == nil && applyErr == nil {
				apply()
			}
			if opts.Options.Hook != nil {
				opts.Options.Hook(point)
			}
		}
	} else {
		apply()
	}
	defer func() {
		if undo == nil {
			return
		}
		if err := undo(context.WithoutCancel(ctx)); err != nil {
			t.Errorf("catalogue %q: undoing the change: %v (the deployment may still carry it)", uc.Name, err)
		}
	}()
	if applyErr != nil {
		t.Errorf("catalogue %q: making the change: %v", uc.Name, applyErr)
		res.Finding = applyErr.Error()
		return res
	}
	rep, err := Run(ctx, env.Config, o)
	switch {
	case uc.During && undo == nil && applyErr == nil:
		t.Errorf("catalogue %q: the change was never made: validation did not reach its contention phase", uc.Name)
		res.Finding = "not applied"
	case applyErr != nil:
		t.Errorf("catalogue %q: making the change: %v", uc.Name, applyErr)
		res.Finding = applyErr.Error()
	case errors.Is(err, ErrConfig):
		t.Errorf("catalogue %q: the case's configuration is invalid, nothing was checked: %v", uc.Name, err)
		res.Finding = err.Error()
	case err != nil:
		t.Errorf("catalogue %q: validation could not finish: %v", uc.Name, err)
		res.Finding = err.Error()
	case rep.Verdict == VerdictSafe:
		res.Verdict = rep.Verdict
		t.Errorf("catalogue %q: validation said SAFE of an unsafe deployment", uc.Name)
	default:
		res.Verdict, res.Finding = rep.Verdict, firstFinding(rep)
	}
	return res
}

// firstFinding is the first problem, refusal or unknown behind rep's verdict.
func firstFinding(rep *Report) string {
	for _, l := range [][]string{rep.Problems, rep.Denied, rep.Inconclusive, rep.Warnings} {
		if len(l) > 0 {
			return l[0]
		}
	}
	return ""
}
