package hostconfig

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/acl"
	"github.com/redlock-kit/redlock-kit/internal/funclib"
	"github.com/redlock-kit/redlock-kit/internal/hostlab"
	"github.com/redlock-kit/redlock-kit/internal/master"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// TestLiveUsersOnASystemdHost: on a real host (systemd-nspawn booting Debian, its
// redis-server unit with its sandbox, cloud-init running the user-data), the user-data
// holds no password and the host's start still loads the function library (the host's
// own admin password); a user added live over the admin connection is saved to the ACL
// file inside the sandbox and is still there after a clean restart and after a crash.
func TestLiveUsersOnASystemdHost(t *testing.T) {
	lab := hostlab.Start(t, hostlab.Options{Hosts: []hostlab.HostSpec{{Name: "h1"}}, Clients: 1, NoBoot: true})
	host := lab.Hosts()[0]
	h := Host{Spec: master.Spec{Name: "h1", Bind: host.Address(), MaxLockTTL: time.Second,
		AdminPassword: strings.Repeat("a", 64),
		LockUsers:     []master.LockUser{{Name: "billing", KeyPrefix: "billing:", Password: strings.Repeat("b", 64)}}}}
	b, err := Render(h)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(b.UserData, h.Spec.AdminPassword) || strings.Contains(b.UserData, h.Spec.LockUsers[0].Password) {
		t.Fatal("the user-data holds a password")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	if err := host.Provision(ctx, b.UserData); err != nil {
		t.Fatal(err)
	}
	endpoint := b.Spec.Addr()
	dial := lab.DialContext(0)
	client := func(user, password string) *redis.Client {
		return redis.NewClient(&redis.Options{Addr: endpoint, Username: user, Password: password, Dialer: dial,
			DialTimeout: time.Second, ReadTimeout: 2 * time.Second, MaxRetries: -1, DisableIdentity: true})
	}
	admin := client("", h.Spec.AdminPassword)
	defer admin.Close()
	waitServing := func() {
		t.Helper()
		deadline := time.Now().Add(3 * time.Minute)
		for {
			c, cancel := context.WithTimeout(ctx, time.Second)
			st, err := funclib.Check(c, admin)
			cancel()
			if err == nil && st.Current {
				return
			}
			if time.Now().After(deadline) {
				out, _ := host.Exec(ctx, "journalctl", "-u", b.Server.Unit, "--no-pager", "-n", "40")
				t.Fatalf("%s does not serve with the current function library (%+v, %v):\n%s", endpoint, st, err, out)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	waitServing() // the functions step ran with the host's own admin password

	orders := acl.User{Name: "orders", KeyPrefix: "orders:", PasswordHashes: []string{redisconf.HashPassword("orders-password-0123456789")}}
	target := acl.Target{Password: h.Spec.AdminPassword, Dialer: dial}
	if err := target.Apply(ctx, endpoint, []acl.User{orders}, nil); err != nil {
		t.Fatal(err)
	}
	canLock := func(when string) {
		t.Helper()
		c := client("orders", "orders-password-0123456789")
		defer c.Close()
		if err := c.Set(ctx, "orders:lock", "v", time.Second).Err(); err != nil {
			t.Fatalf("%s: orders cannot lock: %v", when, err)
		}
	}
	canLock("after the live apply")

	if out, err := host.Systemctl(ctx, "restart", b.Server.Unit); err != nil {
		t.Fatalf("systemctl restart: %v\n%s", err, out)
	}
	waitServing()
	canLock("after a clean restart")

	if err := host.Kill(ctx, b.Server.Unit, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Second) // the unit notices the crash; the gate then holds restart_delay
	waitServing()
	canLock("after a crash and the held restart")

	if err := target.Apply(ctx, endpoint, nil, []string{"orders"}); err != nil {
		t.Fatal(err)
	}
	c := client("orders", "orders-password-0123456789")
	defer c.Close()
	if err := c.Ping(ctx).Err(); err == nil {
		t.Fatal("orders still logs in after its removal") // the control: the checks above can fail
	}
}
