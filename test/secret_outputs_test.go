package test

import (
	"testing"

	"github.com/gruntwork-io/terratest/modules/logger"
	"github.com/gruntwork-io/terratest/modules/terraform"
)

// Outputs that hold secrets (passwords, agent and client configs) are read through these,
// never terraform.Output: terratest logs what `terraform output` prints, and a test log is
// kept and shared. The agent config the validation library reads comes from
// validation.ConfigFromTerraform, which logs nothing either.

// quiet is opts with terratest's logging discarded.
func quiet(opts *terraform.Options) *terraform.Options {
	q := *opts
	q.Logger = logger.Discard
	return &q
}

// secretOutput reads a string output without logging it.
func secretOutput(t *testing.T, opts *terraform.Options, name string) string {
	t.Helper()
	return terraform.Output(t, quiet(opts), name)
}

// secretOutputE is secretOutput returning the error.
func secretOutputE(t *testing.T, opts *terraform.Options, name string) (string, error) {
	t.Helper()
	return terraform.OutputE(t, quiet(opts), name)
}

// secretOutputJSON reads an output's JSON without logging it.
func secretOutputJSON(t *testing.T, opts *terraform.Options, name string) string {
	t.Helper()
	return terraform.OutputJson(t, quiet(opts), name)
}

// secretOutputMap reads a map output without logging it.
func secretOutputMap(t *testing.T, opts *terraform.Options, name string) map[string]string {
	t.Helper()
	return terraform.OutputMap(t, quiet(opts), name)
}
