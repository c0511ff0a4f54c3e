package audit

import (
	"context"
	"errors"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// Values of Master.Anonymous.
const (
	AnonymousRefused = "refused" // NOAUTH: a client without credentials can do nothing
	AnonymousAllowed = "allowed" // a client without credentials was let in
)

// checkAnonymous connects with no credentials at all, as anyone on the network can, and
// requires the master to refuse it (NOAUTH). It also reads protected-mode and bind, which
// are reported (an authenticated deployment may bind every address).
func (m *Master) checkAnonymous(ctx context.Context, t Target, admin *redis.Client) {
	c := redis.NewClient(t.clientOptions(m.Endpoint, "", ""))
	defer c.Close()
	_, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) (string, error) { return c.Ping(ctx).Result() })
	var reply redis.Error
	switch {
	case err == nil:
		m.Anonymous = AnonymousAllowed
	case strings.HasPrefix(err.Error(), "NOAUTH"):
		m.Anonymous = AnonymousRefused
	case strings.HasPrefix(err.Error(), "NOPERM"):
		// Logged in as a passwordless default user that may not PING: still let in.
		m.Anonymous = AnonymousAllowed
	case errors.As(err, &reply):
		m.uncheck("whether a client without credentials is refused could not be told: PING without credentials answered", err)
	default:
		m.uncheck("whether a client without credentials is refused could not be told", err)
	}
	cfg, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) (map[string]string, error) {
		return configGet(ctx, admin, "protected-mode", "bind")
	})
	if err != nil {
		m.uncheck("protected-mode and bind could not be read", err)
		return
	}
	m.ProtectedMode, m.Bind = cfg["protected-mode"], cfg["bind"]
}

// identityConnections is how many more connections the audit opens to each endpoint to see
// that they all reach the same server: a balancer or NAT that spreads connections over
// several servers shows as different run_ids.
const identityConnections = 4

// checkIdentity opens identityConnections new connections to the endpoint, all held open
// at once (a least-connections balancer then spreads them too), each reading the server's
// run_id. Different run_ids mean the endpoint is not one master. A balancer that pins
// every connection from this machine to one server (by source address) cannot be told
// from here: list each master's own address.
func (m *Master) checkIdentity(ctx context.Context, t Target) {
	if m.RunID == "" {
		return // INFO failed: the master is not audited, which is a problem of its own
	}
	clients := make([]*redis.Client, identityConnections)
	for i := range clients {
		clients[i] = redis.NewClient(t.clientOptions(m.Endpoint, t.Username, t.Password))
		defer clients[i].Close()
	}
	seen := []string{m.RunID}
	for _, c := range clients {
		info, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) (string, error) { return c.Info(ctx, "server").Result() })
		if err != nil {
			m.uncheck("whether every connection reaches the same server could not be told", err)
			return
		}
		id := parseInfo(info)["run_id"]
		if id == "" {
			m.uncheck("whether every connection reaches the same server could not be told: INFO server has no run_id", nil)
			return
		}
		if !slices.Contains(seen, id) {
			seen = append(seen, id)
		}
	}
	m.ConnectionRunIDs = seen
}
