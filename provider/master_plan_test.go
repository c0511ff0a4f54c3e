package provider

import (
	"context"
	"net"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework-timetypes/timetypes"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

func summarize(diags diag.Diagnostics) (errs, warns []string) {
	for _, d := range diags {
		s := d.Summary() + ": " + d.Detail()
		if d.Severity() == diag.SeverityError {
			errs = append(errs, s)
		} else {
			warns = append(warns, s)
		}
	}
	return errs, warns
}

func TestCheckBind(t *testing.T) {
	own := machineAddress(t)
	cases := []struct {
		name              string
		bind              string
		allow             types.Bool
		tls               bool
		wantErr, wantWarn string
	}{
		{name: "loopback", bind: "127.0.0.11", allow: types.BoolValue(false)},
		{name: "ipv6 loopback", bind: "::1", allow: types.BoolValue(false)},
		{name: "network address refused", bind: "192.0.2.10", allow: types.BoolValue(false), wantErr: "allow_non_loopback_bind = true"},
		{name: "network address allowed with a warning", bind: own, allow: types.BoolValue(true), wantWarn: "without TLS"},
		{name: "network address with TLS: no clear-text warning", bind: own, allow: types.BoolValue(true), tls: true},
		{name: "wildcard allowed with a warning", bind: "0.0.0.0", allow: types.BoolValue(true), wantWarn: "without TLS"},
		{name: "address not on this machine refused", bind: "192.0.2.10", allow: types.BoolValue(true), tls: true,
			wantErr: "192.0.2.10 is not an address of this machine"},
		{name: "allow flag not known yet", bind: "192.0.2.10", allow: types.BoolUnknown()},
		{name: "host name refused", bind: "localhost", allow: types.BoolValue(true), wantErr: "not an IP address"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Contains(tc.wantErr, "not an address of this machine") && nonlocalBindAllowed() {
				t.Skip("this machine allows binding addresses it does not have (net.ipv4.ip_nonlocal_bind = 1): " +
					"the address passes with a warning here (local.TestBindAddress covers that)")
			}
			var diags diag.Diagnostics
			checkBind(tc.bind, tc.allow, types.BoolValue(tc.tls), &diags)
			expectDiags(t, diags, tc.wantErr, tc.wantWarn)
		})
	}
}

func nonlocalBindAllowed() bool {
	v, err := os.ReadFile("/proc/sys/net/ipv4/ip_nonlocal_bind")
	return err == nil && strings.TrimSpace(string(v)) == "1"
}

// machineAddress is a non-loopback address of this machine (the wildcard when it has none:
// it stands for every address the machine has).
func machineAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return "0.0.0.0"
}

func TestCheckDelays(t *testing.T) {
	s := durationValue
	null := timetypes.NewGoDurationNull()
	cases := []struct {
		name               string
		ttl, margin, delay timetypes.GoDuration
		wantErr            string
	}{
		{name: "defaults", ttl: null, margin: null, delay: null},
		{name: "delay equal to ttl plus default margin", ttl: s("2s"), margin: null, delay: s("3s")},
		{name: "delay larger", ttl: s("2s"), margin: null, delay: s("1m")},
		{name: "delay below ttl", ttl: s("10s"), margin: null, delay: s("5s"), wantErr: `at least "11s"`},
		{name: "delay below ttl plus margin", ttl: s("10s"), margin: s("2s"), delay: s("11s"), wantErr: `at least "12s"`},
		{name: "margin below the drift allowance", ttl: s("30s"), margin: s("300ms"), delay: null, wantErr: `at least "402ms"`},
		{name: "long ttl default margin grows", ttl: s("200s"), margin: null, delay: s("201s"), wantErr: `at least "3m22.102s"`},
		{name: "unknown ttl skips", ttl: timetypes.NewGoDurationUnknown(), margin: null, delay: s("1s")},
		{name: "unknown delay skips", ttl: s("10s"), margin: null, delay: timetypes.NewGoDurationUnknown()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var diags diag.Diagnostics
			checkDelays(tc.ttl, tc.margin, tc.delay, &diags)
			expectDiags(t, diags, tc.wantErr, "")
		})
	}
}

func TestWarnLowerDelays(t *testing.T) {
	s := durationValue
	cases := []struct {
		name          string
		before, after timetypes.GoDuration
		wantWarn      string
	}{
		{name: "lower", before: s("31s"), after: s("11s"), wantWarn: "takes effect after the master's locks granted under the old max TTL have expired (20s after this apply)"},
		{name: "same", before: s("31s"), after: s("31s")},
		{name: "higher", before: s("11s"), after: s("31s")},
		{name: "unknown", before: s("31s"), after: timetypes.NewGoDurationUnknown()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var diags diag.Diagnostics
			state := &masterModel{RestartDelay: tc.before, MaxLockTTL: s("10s")}
			plan := &masterModel{RestartDelay: tc.after, MaxLockTTL: s("10s")}
			warnLowerDelays(state, plan, &diags)
			expectDiags(t, diags, "", tc.wantWarn)
		})
	}
}

func expectDiags(t *testing.T, diags diag.Diagnostics, wantErr, wantWarn string) {
	t.Helper()
	errs, warns := summarize(diags)
	check := func(kind string, got []string, want string) {
		switch {
		case want == "" && len(got) > 0:
			t.Errorf("unexpected %s: %q", kind, got)
		case want != "" && (len(got) != 1 || !strings.Contains(got[0], want)):
			t.Errorf("%s %q, want one containing %q", kind, got, want)
		}
	}
	check("errors", errs, wantErr)
	check("warnings", warns, wantWarn)
}

func TestWarnLongHold(t *testing.T) {
	s := durationValue
	cases := []struct {
		name       string
		state      *masterModel
		ttl, delay timetypes.GoDuration
		wantWarn   string
	}{
		{name: "default", ttl: s("30s"), delay: s("31s")},
		{name: "five minutes", ttl: s("5m"), delay: s("5m3.102s")},
		{name: "an hour", ttl: s("1h"), delay: s("1h37s"), wantWarn: "stays down for restart_delay = 1h0m37s (about 1.0 hours)"},
		{name: "100000 hours", ttl: s("100000h"), delay: s("101000h0m0.002s"), wantWarn: "about 4208.3 days"},
		{name: "a majority down blocks every lock", ttl: s("1h"), delay: s("1h37s"), wantWarn: "every lock is refused for that long"},
		{name: "long delay with a short ttl", ttl: s("30s"), delay: s("2h"), wantWarn: "about 2.0 hours"},
		{name: "same durations written differently", state: &masterModel{MaxLockTTL: s("60m"), RestartDelay: s("1h37s")}, ttl: s("1h"), delay: s("1h0m37s")},
		{name: "unchanged on a later plan", state: &masterModel{MaxLockTTL: s("1h"), RestartDelay: s("1h37s")}, ttl: s("1h"), delay: s("1h37s")},
		{name: "raised on a later plan", state: &masterModel{MaxLockTTL: s("30s"), RestartDelay: s("31s")}, ttl: s("1h"), delay: s("1h37s"), wantWarn: "1h0m37s"},
		{name: "unknown", ttl: timetypes.NewGoDurationUnknown(), delay: timetypes.NewGoDurationUnknown()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var diags diag.Diagnostics
			warnLongHold(context.Background(), tc.state, &masterModel{MaxLockTTL: tc.ttl, RestartDelay: tc.delay}, &diags)
			expectDiags(t, diags, "", tc.wantWarn)
		})
	}
}
