package redlock_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// wrappedClient is a client of a type New cannot look into.
type wrappedClient struct{ *redis.Client }

// TestNewRefusesRetryingClients: New refuses a master's client that may send a command
// again after its reply was lost (see TestReplayedReleaseThroughGoRedis for what that
// breaks), naming the master, the field and the fix; a client built with MaxRetries -1
// is accepted (the control). No client here is ever dialled.
func TestNewRefusesRetryingClients(t *testing.T) {
	client := func(o *redis.Options) redis.UniversalClient {
		c := redis.NewClient(o)
		t.Cleanup(func() { _ = c.Close() })
		return c
	}
	safe := func(addr string) redis.UniversalClient {
		return client(&redis.Options{Addr: addr, MaxRetries: -1})
	}
	// A copy of a safe client's Options() holds MaxRetries 0 (go-redis normalised -1),
	// which a new client reads as the default: 3 retries.
	copied := *safe("127.0.0.1:3").(*redis.Client).Options()
	cluster := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{"127.0.0.1:4"}})
	t.Cleanup(func() { _ = cluster.Close() })
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": "127.0.0.1:5"}})
	t.Cleanup(func() { _ = ring.Close() })

	tests := []struct {
		name     string
		third    redis.UniversalClient // masters[2]; masters[0] and [1] are safe
		retries  int
		mentions []string
	}{
		{"go-redis default options", client(&redis.Options{Addr: "127.0.0.1:7001"}), 3,
			[]string{"master 2 (127.0.0.1:7001)", "Options.MaxRetries is 0 or 3 (3 retries; 0 is the go-redis default", "set MaxRetries: -1", "two holders"}},
		{"MaxRetries 2", client(&redis.Options{Addr: "127.0.0.1:7002", MaxRetries: 2}), 2,
			[]string{"master 2 (127.0.0.1:7002)", "Options.MaxRetries is 2 (2 retries)", "set MaxRetries: -1"}},
		{"a copy of a safe client's options", client(&copied), 3,
			[]string{"master 2 (127.0.0.1:3)", "what a copy of a client's Options() holds for -1", "set MaxRetries: -1"}},
		{"a Cluster client", cluster, -1,
			[]string{"master 2 (master-2)", "*redis.ClusterClient is a Redis Cluster", "MaxRetries: -1"}},
		{"a Ring", ring, -1, []string{"master 2 (master-2)", "*redis.Ring", "MaxRetries: -1"}},
		{"a client New cannot look into", wrappedClient{safe("127.0.0.1:6").(*redis.Client)}, -1,
			[]string{"master 2 (master-2)", "redlock_test.wrappedClient is not a *redis.Client", "pass a *redis.Client built with MaxRetries: -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			masters := []redis.UniversalClient{safe("127.0.0.1:1"), safe("127.0.0.1:2"), tt.third}
			c, err := redlock.New(masters, redlock.Options{})
			if err == nil {
				_ = c.Close()
				t.Fatal("New accepted it")
			}
			var re *redlock.RetryingClientError
			if !errors.As(err, &re) || !errors.Is(err, redlock.ErrInvalid) {
				t.Fatalf("New: %v, want a *RetryingClientError matching ErrInvalid", err)
			}
			if re.Master != 2 || re.Retries != tt.retries {
				t.Errorf("RetryingClientError{Master: %d, Retries: %d}, want master 2, %d retries", re.Master, re.Retries, tt.retries)
			}
			for _, m := range tt.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("New: %q does not mention %q", err, m)
				}
			}
		})
	}
	t.Run("MaxRetries -1 is accepted", func(t *testing.T) {
		c, err := redlock.New([]redis.UniversalClient{safe("127.0.0.1:1"), safe("127.0.0.1:2"), safe("127.0.0.1:7")}, redlock.Options{})
		if err != nil {
			t.Fatalf("New with MaxRetries -1 clients: %v", err)
		}
		_ = c.Close()
	})
}
