package hostconfig

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// withHostAdmin runs the setup's host_admin step against m (a harness master with an ACL
// file), as a host's first boot does: it makes the host's admin password and adds its hash
// to the default user in the ACL file, which m then loads. It returns the master.conf lines that point the
// policy script at m's files (append them to p's master.conf) and the password file.
func withHostAdmin(t *testing.T, p *policy, m *redistest.Master) (conf, pwFile string) {
	t.Helper()
	pwFile = filepath.Join(p.dir, "host-admin-password") // not the admin-password file newPolicy writes
	aclFile := filepath.Join(m.DataDir, "users.acl")
	conf = "ADMIN_PASSWORD_FILE=" + shellQuote(pwFile) + "\nACL_SEED=" + shellQuote(aclFile) + "\nACL_FILE=" + shellQuote(aclFile) +
		"\nSERVICE_USER=root\nSERVICE_GROUP=root\n"
	base, err := os.ReadFile(filepath.Join(p.dir, "master.conf"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(p.dir, "master.conf"), append(base, conf...), 0o644); err != nil {
		t.Fatal(err)
	}
	p.run("host_admin")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := m.Admin().Do(ctx, "ACL", "LOAD").Err(); err != nil {
		t.Fatalf("ACL LOAD of the file host_admin wrote: %v", err)
	}
	return conf, pwFile
}

// TestHostAdminStep: the host's admin password is made on the host (32 random bytes, hex,
// 0600), only its hash is in the ACL file, as a second password of the admin (default)
// user: both it and the operators' admin password log in (the audit still sees one admin).
// A second run keeps the password, adds no second hash and keeps users saved live.
func TestHostAdminStep(t *testing.T) {
	c := redistest.Start(t, redistest.Options{Masters: 1, ACLFile: true})
	m := c.Masters[0]
	p := newPolicy(t, time.Second)
	_, pwFile := withHostAdmin(t, p, m)
	pw, err := os.ReadFile(pwFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi, _ := os.Stat(pwFile); !regexp.MustCompile(`^[0-9a-f]{64}$`).Match(pw) || fi.Mode().Perm() != 0o600 {
		t.Fatalf("host admin password file: %q, mode %v; want 64 hex characters, 0600", pw, fi.Mode().Perm())
	}
	acl, err := os.ReadFile(filepath.Join(m.DataDir, "users.acl"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(acl), string(pw)) || !strings.Contains(string(acl), "#"+redisconf.HashPassword(string(pw))) {
		t.Fatalf("the ACL file should hold the host admin's hash, not its password:\n%s", acl)
	}
	ctx := context.Background()
	for who, password := range map[string]string{"the host": string(pw), "the operators": redistest.AdminPassword} {
		admin := m.ClientAs("default", password)
		err := admin.ConfigGet(ctx, "appendfsync").Err()
		admin.Close()
		if err != nil {
			t.Fatalf("%s' admin password does not log in as the admin: %v", who, err)
		}
	}
	// A live change saved into the file, then setup's step again (a re-run).
	if err := m.Admin().Do(ctx, "ACL", "SETUSER", "tenant", "on", "#"+redisconf.HashPassword("tenant-password-0123456789"), "~t:*").Err(); err != nil {
		t.Fatal(err)
	}
	if err := m.Admin().Do(ctx, "ACL", "SAVE").Err(); err != nil {
		t.Fatal(err)
	}
	p.run("host_admin")
	again, _ := os.ReadFile(pwFile)
	acl, _ = os.ReadFile(filepath.Join(m.DataDir, "users.acl"))
	if string(again) != string(pw) || !strings.Contains(string(acl), "user tenant ") || strings.Count(string(acl), redisconf.HashPassword(string(pw))) != 1 {
		t.Fatalf("a second run changed the password or lost a saved user:\n%s", acl)
	}
}

// TestHostMonitorPassword: with the exporters, setup makes the monitoring user's password for
// redis_exporter on the host (32 random bytes, hex, in the exporter's root-only environment
// file) and adds its hash to the monitoring user in the ACL file: it logs in as that user (and
// the operators' password still does), it is in the ACL file as a hash only, and a second run
// keeps it and adds no second hash. The negative control: without EXPORTER_ENV the monitoring
// user gets no password of the host's.
func TestHostMonitorPassword(t *testing.T) {
	for _, exporters := range []bool{true, false} {
		t.Run(map[bool]string{true: "exporters", false: "no exporters"}[exporters], func(t *testing.T) {
			c := redistest.Start(t, redistest.Options{Masters: 1, ACLFile: true})
			m := c.Masters[0]
			ctx := context.Background()
			operators := "monitor-password-of-the-operators-0123"
			if err := m.Admin().Do(ctx, append([]any{"ACL", "SETUSER", "redlock-monitor"}, toAny(redisconf.MonitorUserRules(operators))...)...).Err(); err != nil {
				t.Fatal(err)
			}
			if err := m.Admin().Do(ctx, "ACL", "SAVE").Err(); err != nil {
				t.Fatal(err)
			}
			p := newPolicy(t, time.Second)
			env := filepath.Join(p.dir, "redis-exporter.env")
			if err := os.WriteFile(env, []byte(`REDIS_ADDR="redis://127.0.0.1:1"`+"\n"+`REDIS_USER="redlock-monitor"`+"\n"), 0o600); err != nil {
				t.Fatal(err)
			}
			if exporters {
				p.appendConf("EXPORTER_ENV=" + shellQuote(env) + "\n")
			}
			withHostAdmin(t, p, m)
			raw, _ := os.ReadFile(env)
			pw := regexp.MustCompile(`(?m)^REDIS_PASSWORD=([0-9a-f]{64})$`).FindStringSubmatch(string(raw))
			if (pw != nil) != exporters {
				t.Fatalf("exporters %v: the environment file after setup:\n%s", exporters, raw)
			}
			if !exporters {
				return
			}
			acl, _ := os.ReadFile(filepath.Join(m.DataDir, "users.acl"))
			if strings.Contains(string(acl), pw[1]) || strings.Count(string(acl), "#"+redisconf.HashPassword(pw[1])) != 1 {
				t.Fatalf("the ACL file should hold the monitoring password's hash once, not the password:\n%s", acl)
			}
			for who, password := range map[string]string{"the host's": pw[1], "the operators'": operators} {
				mon := m.ClientAs("redlock-monitor", password)
				err := mon.Info(ctx, "server").Err()
				mon.Close()
				if err != nil {
					t.Errorf("%s monitoring password does not log in: %v", who, err)
				}
			}
			p.run("host_admin")
			again, _ := os.ReadFile(env)
			acl, _ = os.ReadFile(filepath.Join(m.DataDir, "users.acl"))
			if string(again) != string(raw) || strings.Count(string(acl), redisconf.HashPassword(pw[1])) != 1 {
				t.Fatalf("a second run changed the password or added its hash again:\n%s\n%s", again, acl)
			}
		})
	}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
