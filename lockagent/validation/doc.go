// Package validation proves that a Redlock deployment is safe, from Go: the phases of
// `lockagent validate` as a library, for platform teams' own infrastructure tests.
//
// A run takes the deployment as an agentconfig.Config (what the redlock-cluster and
// redlock-hosts modules' agent_config output holds; ParseConfig reads it) and checks it in
// four phases (docs/validation.md):
//
//  1. audit: every master is independent (distinct run_ids, no replicas), runs with AOF
//     appendfsync always, no-appendfsync-on-rewrite no, noeviction and an explicit
//     maxmemory, stays down for at least the max TTL after a crash, and its clock and
//     round trip are within what Redlock tolerates;
//  2. Redlock behaviour: acquire, exclusion, release, expiry, extend (owner only),
//     owner-only release, increasing fencing tokens, on keys redlock-kit:validate:<random>;
//  3. contention: Options.Clients clients compete for Options.Duration and every hold is
//     checked for overlap;
//  4. the audit again: a change since phase 1 is UNSAFE.
//
// The audit also checks every user but the admin against the server's own dangerous
// commands, that clients without credentials are refused, that every connection to an
// endpoint reaches one server, and reads the restart delay the masters publish. A check
// that cannot be made is INCONCLUSIVE, never SAFE. UnsafeCatalogue and CheckCatalogue
// prove, against a deployment, that each check can fail.
//
// The test keys are deleted afterwards. The Report's verdict is SAFE (with warnings:
// "SAFE, degraded", a minority of masters down), UNSAFE only on evidence that exclusion
// can break, DENIED when a master refused the credentials or the ACL, or INCONCLUSIVE
// when masters did not answer, even after retries. Report.ExitCode is the exit code
// `lockagent validate` gives it.
//
// Run is the plain entry point. Validate and ValidateE are terratest-style helpers:
// Validate fails the test unless the verdict is SAFE; ValidateE returns the report and an
// error (a *VerdictError) instead. ValidateStrict is the pass an infrastructure test wants:
// SAFE with every master audited, "SAFE, degraded" failing too unless the caller allows it.
// They log progress and report with t.Logf, and send go-redis's lines about their runs'
// failed dials there too. They take a TestingT, which *testing.T satisfies, so this package
// does not import "testing".
//
// ConfigFromTerraform reads the config from a Terraform output without logging it (the
// output holds both passwords; terratest's terraform.Output logs what it reads):
//
//	func TestRedlock(t *testing.T) {
//		opts := &terraform.Options{TerraformDir: "../infra/redlock"}
//		defer terraform.Destroy(t, opts)
//		terraform.InitAndApply(t, opts)
//		cfg, err := validation.ConfigFromTerraform(t.Context(), opts.TerraformDir, "agent_config")
//		if err != nil {
//			t.Fatal(err)
//		}
//		validation.ValidateStrict(t, cfg, validation.StrictOptions{})
//	}
package validation
