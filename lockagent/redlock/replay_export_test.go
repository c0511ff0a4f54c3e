package redlock

import "github.com/redis/go-redis/v9"

// ReleaseScript returns the release script's source (durable: the durable release, whose
// hand-offs are all logged), for tests that run a release the way a go-redis client
// replays it.
func ReleaseScript(durable bool) string {
	if durable {
		return durableReleaseScript.Source
	}
	return releaseScript.Source
}

// NewAllowingRetries is New without its refusal of clients that may resend a command
// (refuseRetryingClients): the negative control of the replay tests, which show what such
// a client breaks. New runs over stand-ins that pass the check (never dialled), then each
// master's batcher is given the client passed here; the batchers read it only for requests
// that come after this returns.
func NewAllowingRetries(masters []redis.UniversalClient, opts Options) (*Client, error) {
	standIns := make([]redis.UniversalClient, len(masters))
	for i, rdb := range masters {
		standIns[i] = redis.NewClient(&redis.Options{Addr: addrOf(rdb, i), MaxRetries: -1})
	}
	c, err := New(standIns, opts)
	for _, s := range standIns {
		_ = s.Close()
	}
	if err != nil {
		return nil, err
	}
	for i, m := range c.masters {
		m.rdb = masters[i]
	}
	return c, nil
}
