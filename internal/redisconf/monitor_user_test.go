package redisconf_test

import (
	"context"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// TestMonitorUserRendered: the monitoring user's line has no key and no channel pattern and
// exactly MonitorUserCommands; without a password there is no such user.
func TestMonitorUserRendered(t *testing.T) {
	base := redisconf.Config{Port: 6379, DataDir: "/data", AdminPassword: "a", LockPassword: "l"}
	conf, err := base.Render()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(conf, redisconf.DefaultMonitorUser) {
		t.Errorf("a monitoring user without MonitorPassword:\n%s", conf)
	}
	if !strings.Contains(conf, "\nlatency-monitor-threshold 10\n") {
		t.Errorf("config lacks latency-monitor-threshold (RedlockFsyncSlow reads LATENCY LATEST):\n%s", conf)
	}
	withMonitor := base
	withMonitor.MonitorPassword = "m"
	if conf, err = withMonitor.Render(); err != nil {
		t.Fatal(err)
	}
	want := "\nuser redlock-monitor on \">m\" resetkeys resetchannels -@all +ping +info +client|list +client|info " +
		"+slowlog|get +slowlog|len +latency|latest +latency|history +latency|doctor +memory|stats +command\n"
	if !strings.Contains(conf, want) {
		t.Errorf("config lacks the monitoring user %q:\n%s", want, conf)
	}
	noPassword := base
	noPassword.MonitorUser = "watcher"
	if _, err := noPassword.Render(); err == nil || !strings.Contains(err.Error(), "MonitorPassword") {
		t.Errorf("monitoring user without a password: %v, want an error naming MonitorPassword", err)
	}
}

// TestMonitorUserRights: on a real master, the monitoring user reads the server's state
// (what redis_exporter sends) and can do nothing else: no key read or write, no CONFIG GET
// (it would reveal the passwords), no function call, no pub/sub, no ACL. The admin running
// the same commands is the negative control: each refusal comes from the ACL, not from the
// command.
func TestMonitorUserRights(t *testing.T) {
	c := redistest.Start(t, redistest.Options{Masters: 1, Monitor: true})
	m := c.Masters[0]
	ctx := context.Background()
	if err := m.Admin().Set(ctx, "lock:a", "token", 0).Err(); err != nil {
		t.Fatal(err)
	}
	monitor := m.ClientAs(redistest.MonitorUser, redistest.MonitorPassword)
	t.Cleanup(func() { _ = monitor.Close() })

	allowed := [][]any{
		{"PING"}, {"INFO"}, {"INFO", "all"}, {"CLIENT", "LIST"}, {"CLIENT", "INFO"}, {"SLOWLOG", "GET", "10"},
		{"SLOWLOG", "LEN"}, {"LATENCY", "LATEST"}, {"LATENCY", "HISTORY", "aof-fsync-always"}, {"LATENCY", "DOCTOR"},
		{"MEMORY", "STATS"}, {"COMMAND", "COUNT"},
	}
	for _, cmd := range allowed {
		if err := monitor.Do(ctx, cmd...).Err(); err != nil {
			t.Errorf("monitoring user: %v: %v, want allowed", cmd, err)
		}
	}
	denied := [][]any{
		{"GET", "lock:a"}, {"SET", "lock:b", "x"}, {"DEL", "lock:a"}, {"EXISTS", "lock:a"}, {"KEYS", "*"},
		{"SCAN", "0"}, {"DBSIZE"}, {"CONFIG", "GET", "requirepass"}, {"CONFIG", "SET", "appendfsync", "no"},
		{"FCALL", "redlock_release", "1", "lock:a", "token"}, {"EVAL", "return 1", "0"}, {"PUBLISH", "lock:a", "x"},
		{"SUBSCRIBE", "lock:a"}, {"ACL", "LIST"}, {"CLIENT", "KILL", "ID", "1"}, {"SLOWLOG", "RESET"},
		{"LATENCY", "RESET"}, {"FLUSHALL"}, {"SHUTDOWN"}, {"MONITOR"},
	}
	for _, cmd := range denied {
		err := monitor.Do(ctx, cmd...).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("monitoring user: %v: %v, want NOPERM", cmd, err)
		}
	}
	if got, err := m.Admin().Get(ctx, "lock:a").Result(); err != nil || got != "token" {
		t.Errorf("the key after the monitoring user's attempts: %q, %v; want it untouched", got, err)
	}
	// Negative control: the admin may run what the monitoring user may not (SHUTDOWN and
	// MONITOR would end or take the connection: not repeated).
	for _, cmd := range [][]any{{"GET", "lock:a"}, {"CONFIG", "GET", "requirepass"}, {"ACL", "LIST"}, {"KEYS", "*"}} {
		if err := m.Admin().Do(ctx, cmd...).Err(); err != nil && err != redis.Nil {
			t.Errorf("admin: %v: %v, want allowed (the control shows the refusals above come from the ACL)", cmd, err)
		}
	}
}

// TestMonitorUserInACLFile: a master that loads an ACL file gets the monitoring user from
// that file (as a hash), not from its config: redis-server refuses to start with users in
// both. It starts, and the user reads INFO and no key.
func TestMonitorUserInACLFile(t *testing.T) {
	c := redistest.Start(t, redistest.Options{Masters: 1, Monitor: true, ACLFile: true})
	m := c.Masters[0]
	ctx := context.Background()
	monitor := m.ClientAs(redistest.MonitorUser, redistest.MonitorPassword)
	t.Cleanup(func() { _ = monitor.Close() })
	if err := monitor.Info(ctx, "server").Err(); err != nil {
		t.Errorf("monitoring user INFO: %v", err)
	}
	if err := monitor.Get(ctx, "lock:a").Err(); err == nil || !strings.Contains(err.Error(), "NOPERM") {
		t.Errorf("monitoring user GET: %v, want NOPERM", err)
	}
	rc := redisconf.Config{Port: 6379, DataDir: "/data", AdminPassword: "a", LockPassword: "l", MonitorPassword: "m", ACLFile: "/data/users.acl"}
	conf, err := rc.Render()
	if err != nil {
		t.Fatal(err)
	}
	acl, err := rc.RenderACL()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(conf, redisconf.DefaultMonitorUser) || !strings.Contains(acl, "\nuser redlock-monitor reset on #"+redisconf.HashPassword("m")+" resetkeys resetchannels -@all +ping ") {
		t.Errorf("with an ACL file the monitoring user belongs in it, hashed:\nconfig:\n%s\nacl:\n%s", conf, acl)
	}
}
