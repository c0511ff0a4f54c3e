// Package validate holds the plan-time checks of the redlock provider's schema: each
// validator names what is wrong and how to fix it, so a bad configuration fails at
// `terraform plan` instead of leaving a half-started master behind.
package validate

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timetypes/timetypes"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"

	"github.com/redlock-kit/redlock-kit/internal/master/local"
)

// ParseDuration parses a Go duration string ("30s", "1m30s", "500ms") and explains the
// accepted format when it fails.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	if err != nil {
		return 0, fmt.Errorf("%q is not a duration: write a number with a unit, e.g. \"30s\", \"1m30s\" or \"500ms\"", s)
	}
	return d, nil
}

// Duration accepts duration strings of at least min (min > 0 also refuses zero). It is
// the validator of the timetypes.GoDuration attributes; see GoDuration.
func Duration(min time.Duration) validator.String { return GoDuration(min) }

// GoDuration is the "at least" check for timetypes.GoDuration attributes: the value is read
// as a timetypes.GoDuration (the type's own check already refuses what time.ParseDuration
// does not parse; this one repeats it with an example of the format) and must be greater
// than zero and at least min.
func GoDuration(min time.Duration) validator.String {
	return stringValidator{
		description: fmt.Sprintf("a duration such as \"30s\" of at least %s", min),
		check: func(req validator.StringRequest, diags *diag.Diagnostics) {
			d, parsed := timetypes.GoDuration{StringValue: req.ConfigValue}.ValueGoDuration()
			if parsed.HasError() {
				_, err := ParseDuration(req.ConfigValue.ValueString())
				if err == nil {
					err = fmt.Errorf("%q is not a duration: write a number with a unit, e.g. \"30s\", \"1m30s\" or \"500ms\"", req.ConfigValue.ValueString())
				}
				diags.AddAttributeError(req.Path, "Invalid duration", fmt.Sprintf("%s: %s.", req.Path, err))
				return
			}
			if d <= 0 || d < min {
				diags.AddAttributeError(req.Path, "Duration too small",
					fmt.Sprintf("%s is %s: it must be greater than zero and at least %s.", req.Path, d, min))
			}
		},
	}
}

// memoryPattern is redis.conf's memory unit syntax: bytes, or k/kb/m/mb/g/gb (case-insensitive).
var memoryPattern = regexp.MustCompile(`^(?i)([0-9]+)(b|k|kb|m|mb|g|gb)?$`)

// ParseMemory converts a redis.conf memory size ("64mb", "1gb", "1048576") to bytes, with
// Redis's own units: k = 1000, kb = 1024, m = 1000^2, mb = 1024^2 and so on.
func ParseMemory(s string) (int64, error) {
	m := memoryPattern.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return 0, fmt.Errorf("%q is not a memory size: write bytes or a number with a unit (kb, mb, gb), e.g. \"64mb\"", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is too large", s)
	}
	mult := map[string]int64{"": 1, "b": 1, "k": 1000, "kb": 1024, "m": 1000 * 1000, "mb": 1024 * 1024,
		"g": 1000 * 1000 * 1000, "gb": 1024 * 1024 * 1024}[strings.ToLower(m[2])]
	if n > (1<<62)/mult {
		return 0, fmt.Errorf("%q is too large", s)
	}
	return n * mult, nil
}

// MinMaxMemory is the smallest maxmemory accepted: below about a megabyte Redis's own
// overhead fills the budget and, with noeviction, every lock write is refused.
const MinMaxMemory = 1024 * 1024

// MaxMemory accepts an explicit redis maxmemory of at least MinMaxMemory. Zero (Redis's
// "unlimited") is refused: the safety model wants an explicit limit.
func MaxMemory() validator.String {
	return stringValidator{
		description: "a redis memory size of at least 1mb, e.g. \"64mb\"",
		check: func(req validator.StringRequest, diags *diag.Diagnostics) {
			n, err := ParseMemory(req.ConfigValue.ValueString())
			if err != nil {
				diags.AddAttributeError(req.Path, "Invalid memory size", fmt.Sprintf("%s: %s.", req.Path, err))
				return
			}
			if n < MinMaxMemory {
				diags.AddAttributeError(req.Path, "maxmemory too small",
					fmt.Sprintf("%s is %d bytes: set at least \"1mb\" (0 would mean unlimited, and the safety model requires an explicit limit).", req.Path, n))
			}
		},
	}
}

// AbsolutePath accepts absolute filesystem paths. The detached supervisor and `terraform
// import` both need a path that does not depend on the directory terraform ran in.
func AbsolutePath() validator.String {
	return stringValidator{
		description: "an absolute path",
		check: func(req validator.StringRequest, diags *diag.Diagnostics) {
			if p := req.ConfigValue.ValueString(); !filepath.IsAbs(p) {
				diags.AddAttributeError(req.Path, "Path must be absolute",
					fmt.Sprintf("%s is %q: use an absolute path, e.g. abspath(\"${path.root}/%s\").", req.Path, p, filepath.ToSlash(filepath.Clean(p))))
			}
		},
	}
}

// Executable accepts a command name found on PATH (or an executable path).
func Executable() validator.String {
	return stringValidator{
		description: "a command found on PATH, or the path of an executable",
		check: func(req validator.StringRequest, diags *diag.Diagnostics) {
			if err := local.LookPath(req.ConfigValue.ValueString()); err != nil {
				diags.AddAttributeError(req.Path, "Executable not found", fmt.Sprintf("%s: %s.", req.Path, err))
			}
		},
	}
}

// stringValidator is each validator here: what it accepts, and the check of a known value,
// which adds an attribute error naming the fix. Null and unknown values pass (Required and
// the apply see to them).
type stringValidator struct {
	description string
	check       func(req validator.StringRequest, diags *diag.Diagnostics)
}

func (v stringValidator) Description(context.Context) string { return v.description }

func (v stringValidator) MarkdownDescription(context.Context) string { return v.description }

func (v stringValidator) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	v.check(req, &resp.Diagnostics)
}
