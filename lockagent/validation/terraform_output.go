package validation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"

	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
)

// ErrMissingOutput is wrapped (beside ErrConfig) when the configuration's output is not
// in the state or is empty: the apply did not finish (a partial or failed apply, or none).
var ErrMissingOutput = errors.New("output missing")

// ConfigFromTerraform reads the deployment's configuration from the output named output
// (the modules' agent_config) of the Terraform root module in dir, by running
// `terraform output -no-color -json <output>` there (terraform from PATH, with this
// process's environment, TF_CLI_CONFIG_FILE included). It logs nothing and puts nothing of
// the output in its errors: the output holds both passwords, and a test's log is kept and
// shared. terratest's terraform.Output logs what terraform prints; read secrets with this.
//
// An output that is not in the state (a partial or failed apply, or none yet) is an error
// wrapping ErrMissingOutput and ErrConfig that names it and says to apply. Other errors wrap
// ErrConfig too: nothing was checked.
func ConfigFromTerraform(ctx context.Context, dir, output string) (*agentconfig.Config, error) {
	raw, err := terraformOutput(ctx, dir, output)
	if err != nil {
		return nil, configError{err}
	}
	return parseOutput(output, raw)
}

// terraformOutput is the JSON of one output, as `terraform output -json` prints it.
func terraformOutput(ctx context.Context, dir, output string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "terraform", "output", "-no-color", "-json", output)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if strings.Contains(msg, fmt.Sprintf("Output %q not found", output)) {
			return nil, missingOutput(output, "is not in the state of "+dir)
		}
		// stderr holds terraform's diagnostics, never the output's value (that is stdout).
		return nil, fmt.Errorf("terraform output %s in %s: %v: %s", output, dir, err, lastLines(msg, 6))
	}
	return stdout.Bytes(), nil
}

// parseOutput reads the configuration from an output's JSON: a string holding the
// config's JSON (jsonencode, as the modules write it) or the object itself.
func parseOutput(output string, raw []byte) (*agentconfig.Config, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, configError{missingOutput(output, "is null or empty")}
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, configError{fmt.Errorf("output %s: not a JSON string (%v)", output, errNoValue(err))}
		}
		return parseConfigNamed(output, s)
	}
	return parseConfigNamed(output, string(raw))
}

// missingOutput says which output is missing and what to do.
func missingOutput(output, how string) error {
	return fmt.Errorf("output %s %s: %w: run terraform apply to completion (a partial or failed apply leaves outputs unset), and pass the name of the output that holds the agent config (the modules' agent_config)", output, how, ErrMissingOutput)
}

// errNoValue is a JSON error without the value it was reading: the output holds secrets.
func errNoValue(err error) string {
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return fmt.Sprintf("invalid JSON at byte %d", se.Offset)
	}
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return fmt.Sprintf("field %q: a JSON %s where %s was expected", te.Field, te.Value, te.Type)
	}
	return err.Error()
}

// lastLines keeps the last n lines of s.
func lastLines(s string, n int) string {
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}
