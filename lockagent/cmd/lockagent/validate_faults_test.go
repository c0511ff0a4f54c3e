package main

import (
	"context"
	"encoding/json"
	"strings"
	"sync"
	"testing"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

// pauseAt returns a validate hook that SIGSTOPs masters the first time point is reached
// and SIGCONTs them when the run cleans up (and in t.Cleanup, whatever happened).
func pauseAt(t *testing.T, point string, masters ...*redistest.Master) func(string) {
	var once, resume sync.Once
	resumeAll := func() {
		resume.Do(func() {
			for _, m := range masters {
				if err := m.Resume(); err != nil {
					t.Errorf("resume %s: %v", m.Addr, err)
				}
			}
		})
	}
	t.Cleanup(resumeAll)
	paused := false
	return func(p string) {
		switch p {
		case point:
			once.Do(func() {
				for _, m := range masters {
					if err := m.Pause(); err != nil {
						t.Errorf("pause %s: %v", m.Addr, err)
					}
				}
				paused = true
			})
		case "cleanup":
			if !paused {
				t.Errorf("validate never reached %q", point)
			}
			resumeAll()
		}
	}
}

// verdictOf is the report from its last VERDICT line on.
func verdictOf(t *testing.T, out string) string {
	t.Helper()
	i := strings.LastIndex(out, "VERDICT:")
	if i < 0 {
		t.Fatalf("no verdict:\n%s", out)
	}
	return out[i:]
}

// A majority of masters stops answering in the middle of phase 2 or 3 (SIGSTOP: the
// ports stay open, nothing answers, every round times out). Each check retries, then
// reports INCONCLUSIVE, never FAIL, and the verdict is INCONCLUSIVE with exit 75. Each
// subtest pauses at the step where a timeout used to be reported as a safety failure
// (the release check's probe: "after A released, the lock was still held (taken=false,
// err=... did not answer within the node timeout)").
func TestValidateMastersPausedIsInconclusive(t *testing.T) {
	validateEnv(t)
	tests := []struct {
		point string // validateHook point where the masters stop
		check string // the check that must be reported INCONCLUSIVE
	}{
		{"acquire:acquire", "acquire"},
		{"exclusion:attempt", "exclusion"},
		{"release:probe", "release"},
		{"expiry:wait", "expiry"},
		{"extend:extend", "extend"},
		{"owner-only release:release", "owner-only release"},
		{"fencing:acquisitions", "fencing"},
		{"contention", ""},
	}
	for _, tc := range tests {
		t.Run(tc.point, func(t *testing.T) {
			t.Parallel()
			c := redistest.StartKit(t, redistest.Options{Masters: 3})
			hook := pauseAt(t, tc.point, c.Masters[0], c.Masters[1])
			args := append([]string{"-c", writeAgentConfig(t, c, nil)}, quick...)
			code, out, errOut := runValidateHooked(t, hook, append(args, "--json")...)
			if code != validation.ExitInconclusive {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, validation.ExitInconclusive, out, errOut)
			}
			var doc validateResult
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatalf("stdout is not one JSON document: %v\n%s", err, out)
			}
			if doc.Verdict != "INCONCLUSIVE" || doc.Safe || len(doc.Problems) != 0 || len(doc.Denied) != 0 || len(doc.Inconclusive) == 0 {
				t.Fatalf("verdict %q safe %v problems %q denied %q inconclusive %q\nprogress:\n%s",
					doc.Verdict, doc.Safe, doc.Problems, doc.Denied, doc.Inconclusive, errOut)
			}
			seen := tc.check == ""
			for _, b := range doc.Behaviour {
				if b.Status == validation.StatusFailed {
					t.Errorf("check %q reported as evidence: %s", b.Name, b.Detail)
				}
				if b.Name == tc.check {
					seen = true
					if b.Status != validation.StatusInconclusive || b.Attempts != validation.CheckAttempts {
						t.Errorf("check %q: status %s after %d attempt(s), want %s after %d: %s",
							b.Name, b.Status, b.Attempts, validation.StatusInconclusive, validation.CheckAttempts, b.Detail)
					}
				}
			}
			if !seen {
				t.Errorf("check %q not reported: %+v", tc.check, doc.Behaviour)
			}
			if doc.Contention == nil || doc.Contention.Violations != 0 || doc.Contention.Status == validation.StatusFailed {
				t.Errorf("contention: %+v", doc.Contention)
			}
			if tc.check == "" && (doc.Contention == nil || doc.Contention.Status != validation.StatusInconclusive || doc.Contention.Attempts != validation.ContentionAttempts) {
				t.Errorf("contention not inconclusive after %d attempts: %+v", validation.ContentionAttempts, doc.Contention)
			}
			if !strings.Contains(errOut, "did not answer within the node timeout") {
				t.Errorf("progress does not say the masters timed out:\n%s", errOut)
			}
			assertNoValidateKeys(t, c)
		})
	}
}

// A majority down before phase 1: nothing can be locked, so nothing was shown about
// exclusion either way: INCONCLUSIVE, not UNSAFE.
func TestValidateMajorityDownIsInconclusive(t *testing.T) {
	validateEnv(t)
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	for _, m := range c.Masters[:2] {
		if err := m.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	code, out, errOut := runValidateCmd(t, append([]string{"-c", writeAgentConfig(t, c, nil)}, quick...)...)
	if code != validation.ExitInconclusive {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, validation.ExitInconclusive, out, errOut)
	}
	verdict := verdictOf(t, out)
	for _, want := range []string{"VERDICT: INCONCLUSIVE", "fewer than the quorum", "fewer masters are reachable than the quorum"} {
		if !strings.Contains(verdict, want) {
			t.Errorf("verdict lacks %q:\n%s", want, out)
		}
	}
	if !strings.Contains(out, "Redlock behaviour: skipped") || !strings.Contains(out, "attempt 3 of 3") {
		t.Errorf("report does not show the skipped phases and the audit's retries:\n%s", out)
	}
}

// Evidence beats ignorance: an unsafe setting read in phase 1 keeps the verdict UNSAFE
// even when a majority stops answering in phase 2.
func TestValidateUnsafeSettingWinsOverTimeouts(t *testing.T) {
	validateEnv(t)
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	if err := c.Masters[2].Admin().ConfigSet(context.Background(), "appendfsync", "everysec").Err(); err != nil {
		t.Fatal(err)
	}
	hook := pauseAt(t, "release:probe", c.Masters[0], c.Masters[1])
	code, out, errOut := runValidateHooked(t, hook, append([]string{"-c", writeAgentConfig(t, c, nil)}, quick...)...)
	if code != validation.ExitUnsafe {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, validation.ExitUnsafe, out, errOut)
	}
	verdict := verdictOf(t, out)
	for _, want := range []string{"VERDICT: UNSAFE (1 problem(s))", c.Masters[2].Addr + " has appendfsync everysec", "also inconclusive:", `"release"`} {
		if !strings.Contains(verdict, want) {
			t.Errorf("verdict lacks %q:\n%s", want, verdict)
		}
	}
}

// Wrong credentials are their own verdict (DENIED, exit 77), named with the server's
// WRONGPASS, and what could not be read is shown as unknown, not as "aof off
// appendfsync  maxmemory 0".
func TestValidateWrongPasswordIsDenied(t *testing.T) {
	validateEnv(t)
	tests := []struct {
		name  string
		edit  func(map[string]any)
		wants []string
	}{
		{"admin password", func(m map[string]any) { m["admin_password"] = "not-the-admin-password" },
			[]string{"unknown (TIME: WRONGPASS", "ok   fencing"}},
		{"lock user password", func(m map[string]any) { m["password"] = "not-the-lock-password" },
			[]string{"lock user: WRONGPASS", "DENIED acquire", "skipped: the masters refused the lock user"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := redistest.StartKit(t, redistest.Options{Masters: 3})
			code, out, errOut := runValidateCmd(t, append([]string{"-c", writeAgentConfig(t, c, tc.edit)}, quick...)...)
			if code != validation.ExitDenied {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, validation.ExitDenied, out, errOut)
			}
			verdict := verdictOf(t, out)
			if !strings.HasPrefix(verdict, "VERDICT: DENIED") || !strings.Contains(verdict, "WRONGPASS") || !strings.Contains(verdict, "Fix: the password") {
				t.Errorf("verdict does not name the refusal and the fix:\n%s", verdict)
			}
			for _, w := range tc.wants {
				if !strings.Contains(out, w) {
					t.Errorf("report lacks %q:\n%s", w, out)
				}
			}
			for _, bad := range []string{"aof off", "appendfsync  ", "maxmemory 0", "FAIL", "UNSAFE"} {
				if strings.Contains(out, bad) {
					t.Errorf("report shows %q, an unknown value printed as a fact or a refusal taken for evidence:\n%s", bad, out)
				}
			}
		})
	}
}

// go-redis logs every failed dial on its own. With a master down those lines must not
// reach the CLI's stderr unless asked for with --log-level debug (then as slog lines).
// A real process: go-redis's default logger writes to the process's stderr.
func TestValidateGoRedisLogsOnlyAtDebug(t *testing.T) {
	c := redistest.StartKit(t, redistest.Options{Masters: 3})
	if err := c.Masters[2].Kill(); err != nil {
		t.Fatal(err)
	}
	cfg := writeAgentConfig(t, c, nil)
	for _, debug := range []bool{false, true} {
		args := append([]string{"validate", "-c", cfg}, quick...)
		if debug {
			args = append(args, "--log-level", "debug")
		}
		code, out, errOut := runAgent(t, nil, args...)
		if code != validation.ExitSafe {
			t.Fatalf("debug=%v: exit %d, want 0\nstdout:\n%s\nstderr:\n%s", debug, code, out, errOut)
		}
		dialLines := 0
		for _, line := range strings.Split(errOut, "\n") {
			if strings.Contains(line, "failed to dial") || strings.Contains(line, "connection pool") {
				dialLines++
				if !strings.Contains(line, "level=DEBUG") || !strings.Contains(line, "go-redis:") {
					t.Errorf("debug=%v: go-redis line not routed through the CLI's logger: %s", debug, line)
				}
			}
		}
		if !debug && dialLines > 0 {
			t.Errorf("without --log-level debug, stderr carries %d go-redis dial line(s):\n%s", dialLines, errOut)
		}
		if debug && dialLines == 0 {
			t.Errorf("with --log-level debug, stderr shows no go-redis dial line for the dead master %s:\n%s", c.Masters[2].Addr, errOut)
		}
	}
}
