package main

import (
	"fmt"
	"io"
	"slices"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/localmasters"
	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
	"github.com/redlock-kit/redlock-kit/lockagent/internal/bench"
)

// spawnTLSMasters starts n TLS-only masters beside the spawned plain ones, with their own
// CA, when the run includes lockagent-tls (by default it does): the same library, the same
// server config and disk, over TLS. stop stops them.
func spawnTLSMasters(n int, cfg *bench.Config, stderr io.Writer) (stop func(), err error) {
	if len(cfg.Implementations) > 0 && !slices.Contains(cfg.Implementations, bench.LockagentTLS) {
		return func() {}, nil
	}
	fmt.Fprintf(stderr, "lockagent bench: starting %d more masters serving TLS only, for %s...\n", n, bench.LockagentTLS)
	cluster, err := localmasters.New(localmasters.Options{Masters: n, TLS: true})
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "lockagent bench: TLS-only masters %v\n", cluster.Addrs())
	deployment := &agentconfig.Config{Endpoints: cluster.Addrs(), Username: localmasters.LockUser,
		Password: localmasters.LockPassword, TLS: true, CACertPEM: cluster.CACertPEM}
	cfg.NewTLSClients = func() []*redis.Client { return lockClients(deployment) }
	if len(cfg.Implementations) == 0 {
		cfg.Implementations = append(slices.Clone(bench.AllImplementations), bench.LockagentTLS)
	}
	return func() {
		if err := cluster.Close(); err != nil {
			fmt.Fprintf(stderr, "lockagent bench: stopping the TLS masters: %v\n", err)
		}
	}, nil
}
