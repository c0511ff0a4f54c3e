package redisconf

import (
	"slices"
	"strings"
	"testing"
)

func TestRenderScriptsAndUsers(t *testing.T) {
	base := Config{Port: 6379, DataDir: "/data", AdminPassword: "a", LockPassword: "l"}
	conf, err := base.Render()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"busy-reply-threshold 100\n", "user redlock on \">l\" resetkeys ~* resetchannels &* -@all " + strings.Join(LockUserCommands, " ") + "\n"} {
		if !strings.Contains(conf, want) {
			t.Errorf("config lacks %q:\n%s", want, conf)
		}
	}
	if strings.Contains(conf, DefaultEvalUser) {
		t.Errorf("an EVAL user without EvalPassword:\n%s", conf)
	}
	for _, c := range []string{"+eval", "+evalsha", "+script|load", "+function"} {
		if slices.Contains(LockUserCommands, c) {
			t.Errorf("LockUserCommands has %s: a lock user could run Lua of its own", c)
		}
	}
	if !slices.Contains(LockUserCommands, "+fcall") {
		t.Error("LockUserCommands lacks +fcall: lock users could not run the kit's functions")
	}

	withEval := base
	withEval.EvalPassword = "e"
	conf, err = withEval.Render()
	if err != nil {
		t.Fatal(err)
	}
	evalLine := "user redlock-eval on \">e\" resetkeys ~* resetchannels &* -@all " + strings.Join(EvalUserCommands(), " ") + "\n"
	if !strings.Contains(conf, evalLine) {
		t.Errorf("config lacks the EVAL user %q:\n%s", evalLine, conf)
	}
	eval := EvalUserCommands()
	if slices.Contains(eval, "+fcall") || !slices.Contains(eval, "+eval") || !slices.Contains(eval, "+set") {
		t.Errorf("EvalUserCommands = %v: want the lock commands with EVAL instead of FCALL", eval)
	}

	noPassword := base
	noPassword.EvalUser = "interop"
	if _, err := noPassword.Render(); err == nil || !strings.Contains(err.Error(), "EvalPassword") {
		t.Errorf("EVAL user without a password: %v, want an error naming EvalPassword", err)
	}
}
