package validation

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
)

// TestingT is the part of *testing.T the helpers use, as in terratest: any testing.TB
// (or terratest's own TestingT implementations) will do. When t also has
// Context() context.Context (testing.TB since Go 1.24), the run ends with the test.
type TestingT interface {
	Helper()
	Errorf(format string, args ...any)
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
}

// VerdictError is ValidateE's error for a run that finished with a verdict other than
// SAFE (SAFE, degraded is SAFE). Report is the whole report.
type VerdictError struct{ Report *Report }

func (e *VerdictError) Error() string {
	return "validation: " + e.Report.String()
}

// Validate validates the deployment cfg describes (see Run) with the default options,
// logging the progress and the report with t.Logf, and fails the test (t.Fatalf) unless
// the verdict is SAFE. It returns the report.
func Validate(t TestingT, cfg *agentconfig.Config) *Report {
	t.Helper()
	return ValidateWithOptions(t, cfg, Options{})
}

// ValidateE is Validate without failing the test: it returns the report (nil when the run
// could not finish) and an error unless the verdict is SAFE: a *VerdictError for UNSAFE,
// DENIED and INCONCLUSIVE, an error wrapping ErrConfig for a bad configuration, or why the
// run could not finish.
func ValidateE(t TestingT, cfg *agentconfig.Config) (*Report, error) {
	t.Helper()
	return ValidateWithOptionsE(t, cfg, Options{})
}

// ValidateWithOptions is Validate with options. Progress goes to t.Logf unless
// opts.Progress is set.
func ValidateWithOptions(t TestingT, cfg *agentconfig.Config, opts Options) *Report {
	t.Helper()
	rep, err := ValidateWithOptionsE(t, cfg, opts)
	if err != nil {
		t.Fatalf("%v", err)
	}
	return rep
}

// ValidateWithOptionsE is ValidateE with options. Progress goes to t.Logf unless
// opts.Progress is set.
func ValidateWithOptionsE(t TestingT, cfg *agentconfig.Config, opts Options) (*Report, error) {
	t.Helper()
	ctx := context.Background()
	if c, ok := t.(interface{ Context() context.Context }); ok {
		ctx = c.Context()
	}
	var endRedisLogs func()
	opts.Dialer, endRedisLogs = testLogs(t, opts.Dialer)
	defer endRedisLogs()
	var lw *logWriter
	if opts.Progress == nil {
		lw = &logWriter{t: t}
		opts.Progress = lw
	}
	rep, err := Run(ctx, cfg, opts)
	if lw != nil {
		lw.flush()
	}
	if errors.Is(err, ErrConfig) {
		return nil, fmt.Errorf("validation: invalid configuration, nothing was checked: %w", err)
	}
	if err != nil {
		return nil, fmt.Errorf("validation could not finish: %w", err)
	}
	t.Logf("%s", rep)
	if rep.Verdict != VerdictSafe {
		return rep, &VerdictError{Report: rep}
	}
	return rep, nil
}

// ParseConfig reads the JSON of the modules' agent_config output. Unknown fields are an
// error; the environment is not read. An empty or null value, or "<nil>" (what terratest's
// OutputE returns for an output a partial apply left unset), is reported as a missing output
// (ErrMissingOutput). Read the output with ConfigFromTerraform, which logs nothing: terratest's
// terraform.Output logs the passwords it holds.
func ParseConfig(agentConfigJSON string) (*agentconfig.Config, error) {
	return parseConfigNamed("agent_config", agentConfigJSON)
}

// parseConfigNamed is ParseConfig of the output named output.
func parseConfigNamed(output, configJSON string) (*agentconfig.Config, error) {
	switch strings.TrimSpace(configJSON) {
	case "", "null", "<nil>":
		return nil, configError{missingOutput(output, "is empty (\"<nil>\", null or \"\")")}
	}
	dec := json.NewDecoder(strings.NewReader(configJSON))
	dec.DisallowUnknownFields()
	cfg := &agentconfig.Config{}
	if err := dec.Decode(cfg); err != nil {
		return nil, configError{fmt.Errorf("%s: %w", output, err)}
	}
	return cfg, nil
}

// IsVerdict reports whether err is a *VerdictError with verdict v.
func IsVerdict(err error, v Verdict) bool {
	var ve *VerdictError
	return errors.As(err, &ve) && ve.Report.Verdict == v
}

// logWriter sends whole lines to t.Logf.
type logWriter struct {
	t   TestingT
	mu  sync.Mutex
	buf bytes.Buffer
}

func (w *logWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf.Write(p)
	for {
		i := bytes.IndexByte(w.buf.Bytes(), '\n')
		if i < 0 {
			break
		}
		line := string(w.buf.Next(i + 1))
		w.t.Logf("%s", line[:len(line)-1])
	}
	return len(p), nil
}

func (w *logWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() > 0 {
		w.t.Logf("%s", w.buf.String())
		w.buf.Reset()
	}
}
