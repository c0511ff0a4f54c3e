package validate

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func TestParseMemory(t *testing.T) {
	cases := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"64mb", 64 << 20, false},
		{"64MB", 64 << 20, false},
		{"1gb", 1 << 30, false},
		{"1m", 1000000, false},
		{"2k", 2000, false},
		{"1048576", 1048576, false},
		{"lots", 0, true},
		{"-1mb", 0, true},
		{"64 mb", 0, true},
		{"99999999999999999999gb", 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			got, err := ParseMemory(tc.in)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Fatalf("ParseMemory(%q) = %d, %v; want %d, error %v", tc.in, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func runString(v validator.String, value string) []string {
	resp := &validator.StringResponse{}
	v.ValidateString(context.Background(), validator.StringRequest{Path: path.Root("attr"), ConfigValue: types.StringValue(value)}, resp)
	var out []string
	for _, d := range resp.Diagnostics.Errors() {
		out = append(out, d.Summary()+": "+d.Detail())
	}
	return out
}

func TestValidators(t *testing.T) {
	cases := []struct {
		name      string
		v         validator.String
		value     string
		wantError string // "" = valid
	}{
		{"duration ok", Duration(time.Millisecond), "30s", ""},
		{"duration without unit", Duration(time.Millisecond), "30", "not a duration"},
		{"duration words", Duration(time.Millisecond), "30 seconds", "not a duration"},
		{"duration zero", Duration(time.Millisecond), "0s", "greater than zero"},
		{"duration negative", Duration(time.Millisecond), "-5s", "greater than zero"},
		{"go duration with two units", GoDuration(time.Second), "1m30s", ""},
		{"go duration at the minimum", GoDuration(time.Second), "1000ms", ""},
		{"go duration below the minimum", GoDuration(time.Second), "999ms", "at least 1s"},
		{"go duration padded", GoDuration(time.Second), " 30s", "not a duration"},
		{"maxmemory ok", MaxMemory(), "64mb", ""},
		{"maxmemory zero is unlimited", MaxMemory(), "0", "explicit limit"},
		{"maxmemory garbage", MaxMemory(), "plenty", "not a memory size"},
		{"absolute ok", AbsolutePath(), "/var/lib/redlock/m1", ""},
		{"relative refused", AbsolutePath(), "data/m1", "abspath"},
		{"executable on PATH", Executable(), "sh", ""},
		{"executable missing", Executable(), "no-such-program-redlock", "not found on PATH"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			errs := runString(tc.v, tc.value)
			switch {
			case tc.wantError == "" && len(errs) > 0:
				t.Fatalf("%q: unexpected errors %v", tc.value, errs)
			case tc.wantError != "" && (len(errs) != 1 || !strings.Contains(errs[0], tc.wantError)):
				t.Fatalf("%q: errors %v, want one containing %q", tc.value, errs, tc.wantError)
			case tc.wantError != "" && !strings.Contains(errs[0], "attr"):
				t.Fatalf("%q: error %q does not name the attribute", tc.value, errs[0])
			}
		})
	}
}
