package test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gruntwork-io/terratest/modules/terraform"
	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
	"github.com/redlock-kit/redlock-kit/lockagent/validation"
)

// tenantConfigs reads the client_configs output: one client JSON per lock user.
func tenantConfigs(t *testing.T, d *deployment) map[string]*agentconfig.Config {
	t.Helper()
	raw := secretOutputMap(t, d.opts, "client_configs")
	out := map[string]*agentconfig.Config{}
	for name, js := range raw {
		cfg, err := validation.ParseConfig(js)
		if err != nil {
			t.Fatalf("client_configs[%q]: %v", name, err)
		}
		if cfg.AdminPassword != "" || strings.Contains(js, d.adminPass) {
			t.Fatalf("client_configs[%q] carries the admin secret", name)
		}
		out[name] = cfg
	}
	return out
}

// tenantLocker is a Redlock client configured from one tenant's client config.
func tenantLocker(t *testing.T, cfg *agentconfig.Config) *redlock.Client {
	t.Helper()
	var masters []redis.UniversalClient
	for _, e := range cfg.Endpoints {
		c := redis.NewClient(validation.ClientOptions(cfg, e, nil))
		t.Cleanup(func() { _ = c.Close() })
		masters = append(masters, c)
	}
	lc, err := redlock.New(masters, redlock.Options{KeyPrefix: cfg.KeyPrefix, MaxTTL: cfg.MaxLockTTL.Duration})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lc.Close() })
	return lc
}

// Two applications share the cluster, each with its own lock user: the module gives each
// a client config with its prefix and no admin secret, the deployment validates SAFE (the
// audit proves with ACL DRYRUN that neither reaches the other's keys), one cannot delete the
// other's held lock, and removing a tenant in place shuts only that tenant out.
func TestTenantsAreIsolatedEndToEnd(t *testing.T) {
	t.Parallel()
	d := deployLocalFiveVars(t, "5s", map[string]interface{}{
		"lock_users": map[string]interface{}{
			"billing": map[string]interface{}{"key_prefix": "billing:"},
			"orders":  map[string]interface{}{"key_prefix": "orders:"},
		},
	})
	if d.lockUser != "" && d.lockUser != "<nil>" {
		t.Errorf("lock_user output = %q with lock_users, want null", d.lockUser)
	}
	cfgs := tenantConfigs(t, d)
	if len(cfgs) != 2 || cfgs["billing"] == nil || cfgs["orders"] == nil {
		t.Fatalf("client_configs = %v, want billing and orders", cfgs)
	}
	for name, cfg := range cfgs {
		if cfg.Username != name || cfg.KeyPrefix != name+":" || len(cfg.Password) < 32 {
			t.Errorf("client_configs[%q]: user %q, prefix %q, password of %d chars", name, cfg.Username, cfg.KeyPrefix, len(cfg.Password))
		}
	}

	rep := d.validateSafe(t) // agent_config: the first tenant (billing) plus the admin
	for _, m := range rep.Audit.Masters {
		// The audit lists every user but the admin; the tenants are those with keys (the
		// monitoring user has none).
		tenants := 0
		for _, u := range m.LockUsers {
			if len(u.Keys) > 0 {
				tenants++
			}
		}
		if !m.TenantsChecked || tenants != 2 || len(m.TenantLeaks) != 0 {
			t.Errorf("audit of %s: checked %v, users %v, leaks %q", m.Endpoint, m.TenantsChecked, m.LockUsers, m.TenantLeaks)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	billing := tenantLocker(t, cfgs["billing"])
	held, err := billing.Acquire(ctx, "invoice-run", 5*time.Second)
	if err != nil {
		t.Fatalf("billing acquires: %v", err)
	}
	if held.Key() != "billing:invoice-run" {
		t.Fatalf("billing's key = %q, want the prefix from its client config", held.Key())
	}
	for i, e := range cfgs["orders"].Endpoints {
		c := redis.NewClient(validation.ClientOptions(cfgs["orders"], e, nil))
		err := c.Del(ctx, held.Key()).Err()
		c.Close()
		if err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("master %d: orders deleting billing's held lock: %v, want NOPERM", i, err)
		}
	}
	orders := tenantLocker(t, cfgs["orders"])
	theirs, err := orders.Acquire(ctx, "invoice-run", 5*time.Second)
	if err != nil {
		t.Fatalf("orders takes its own invoice-run while billing holds billing's: %v", err)
	}
	if err := theirs.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// Remove orders in place: its user is deleted (its clients disconnected), billing keeps
	// its lock and its password. Billing extends its lock every second meanwhile, as a
	// holder does across slow work, so that the check does not depend on how long the apply
	// takes. A master too busy to answer in the node timeout (the apply runs beside other
	// tests on a loaded machine) is not the removal cutting billing off: such an extend is
	// tried again, and if the lock's validity runs out that way, billing must acquire anew
	// after the apply. Any other error (a denial, a dropped connection) fails the test.
	d.opts.Vars["lock_users"] = map[string]interface{}{"billing": map[string]interface{}{"key_prefix": "billing:"}}
	stopExtending, extendErr := make(chan struct{}), make(chan error, 1)
	lapsed := false
	go func() {
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		busy := false // the last extend failed only by node timeouts
		for {
			select {
			case <-stopExtending:
				extendErr <- nil
				return
			case <-tick.C:
				err := held.Extend(ctx, 5*time.Second)
				switch {
				case err == nil:
					busy = false
				case onlyNodeTimeouts(err):
					t.Logf("billing's extend, masters busy (tried again): %v", err)
					busy = true
				case busy && errors.Is(err, redlock.ErrExpired):
					t.Logf("billing's lock lapsed while masters were too busy to answer: %v", err)
					lapsed = true
					extendErr <- nil
					return
				default:
					extendErr <- err
					return
				}
			}
		}
	}()
	out := terraform.Apply(t, d.opts)
	close(stopExtending)
	if err := <-extendErr; err != nil {
		t.Errorf("billing's lock, extended while orders was removed: %v", err)
	}
	if !strings.Contains(out, "0 added, 5 changed, 0 destroyed") && !strings.Contains(out, "0 added, 5 changed, 1 destroyed") {
		t.Errorf("removing a tenant is not an in-place change of the five masters:\n%s", out)
	}
	for i, e := range cfgs["orders"].Endpoints {
		c := redis.NewClient(validation.ClientOptions(cfgs["orders"], e, nil))
		err := c.Ping(ctx).Err()
		c.Close()
		if err == nil || !strings.Contains(err.Error(), "WRONGPASS") {
			t.Errorf("master %d: the removed tenant logs in: %v, want WRONGPASS", i, err)
		}
	}
	// After the apply, billing extends once more; masters too busy to answer in the node
	// timeout are tried again as above, and a lock that lapsed that way is acquired anew.
	for busy := false; !lapsed; {
		err := held.Extend(ctx, 5*time.Second)
		if err == nil {
			break
		}
		if onlyNodeTimeouts(err) {
			t.Logf("billing's extend after the apply, masters busy (tried again): %v", err)
			busy = true
			time.Sleep(100 * time.Millisecond)
			continue
		}
		if busy && errors.Is(err, redlock.ErrExpired) {
			t.Logf("billing's lock lapsed while masters were too busy to answer: %v", err)
			lapsed = true
			break
		}
		t.Errorf("billing extends its lock after orders was removed: %v", err)
		break
	}
	if lapsed {
		again, err := billing.Acquire(ctx, "invoice-run", 5*time.Second)
		if err != nil {
			t.Fatalf("billing acquires again after orders was removed: %v", err)
		}
		held = again
	}
	if got := tenantConfigs(t, d)["billing"].Password; got != cfgs["billing"].Password {
		t.Error("billing's password changed when another tenant was removed")
	}
	if err := held.Release(ctx); err != nil {
		t.Fatal(err)
	}
	if code := terraform.PlanExitCode(t, d.opts); code != 0 {
		t.Errorf("plan after the change = %d, want 0 (no diff):\n%s", code, terraform.Plan(t, d.opts))
	}
}

// onlyNodeTimeouts reports whether err is a round that failed only because masters did not
// answer within the node timeout (busy), not because one refused or dropped the client.
func onlyNodeTimeouts(err error) bool {
	var ue *redlock.UnavailableError
	if !errors.As(err, &ue) || errors.Is(err, redlock.ErrDenied) || len(ue.Errors) == 0 {
		return false
	}
	for _, me := range ue.Errors {
		if !errors.Is(me, redlock.ErrNodeTimeout) {
			return false
		}
	}
	return true
}
