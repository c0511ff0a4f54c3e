package redlock_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// TestNewRefusesSentinelFailoverClients: a Sentinel failover client (redis.NewFailoverClient,
// or redis.NewUniversalClient with MasterName) is a *redis.Client with MaxRetries -1 here,
// which New's retry check alone would accept. But it is not one independent master: Sentinel promotes
// a replica, which misses the writes that had not replicated (a held key, a raised fence
// register), the very reason New refuses a *redis.ClusterClient. go-redis builds its options
// with Addr "FailoverClient", which New looks for and refuses. The control: a plain client
// with the same options is accepted. No client here is ever dialled.
func TestNewRefusesSentinelFailoverClients(t *testing.T) {
	plain := func(addr string) redis.UniversalClient {
		c := redis.NewClient(&redis.Options{Addr: addr, MaxRetries: -1})
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	failover := redis.NewFailoverClient(&redis.FailoverOptions{MasterName: "m", SentinelAddrs: []string{"127.0.0.1:7"}, MaxRetries: -1})
	t.Cleanup(func() { _ = failover.Close() })
	universal := redis.NewUniversalClient(&redis.UniversalOptions{MasterName: "m", Addrs: []string{"127.0.0.1:8"}, MaxRetries: -1})
	t.Cleanup(func() { _ = universal.Close() })

	control, err := redlock.New([]redis.UniversalClient{plain("127.0.0.1:1"), plain("127.0.0.1:2"), plain("127.0.0.1:3")}, redlock.Options{})
	if err != nil {
		t.Fatalf("control: three plain clients with MaxRetries -1 refused: %v", err)
	}
	_ = control.Close()
	for name, third := range map[string]redis.UniversalClient{"NewFailoverClient": failover, "NewUniversalClient with MasterName": universal} {
		c, err := redlock.New([]redis.UniversalClient{plain("127.0.0.1:1"), plain("127.0.0.1:2"), third}, redlock.Options{})
		if err == nil {
			_ = c.Close()
			t.Errorf("%s (a %T, MaxRetries -1) accepted as an independent master", name, third)
			continue
		}
		if !errors.Is(err, redlock.ErrInvalid) || !strings.Contains(err.Error(), "Sentinel") || !strings.Contains(err.Error(), "redis.NewClient") {
			t.Errorf("%s: %v, want an error matching ErrInvalid that names Sentinel and the fix (redis.NewClient)", name, err)
		}
	}
}
