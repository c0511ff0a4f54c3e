package local

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Safety is the safety settings of a master, as redis.conf or the live server has them. A
// change made behind the runtime's back shows here.
type Safety struct {
	AppendOnly             string // "yes" or "no"
	AppendFsync            string
	NoAppendfsyncOnRewrite string // "yes" or "no"
	MaxMemoryPolicy        string
	ReplicaOf              string // "host port" when the server is a replica, else ""
}

// Live is what a running master reports about itself.
type Live struct {
	RunID      string
	PID        int
	AOFEnabled bool
	MaxMemory  int64 // bytes
	Safety
}

// adminClient talks to the master at addr as the admin; tlsConf is its client TLS config
// (master.Spec.ClientTLS: nil without TLS).
func adminClient(addr, password string, tlsConf *tls.Config) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, Password: password, TLSConfig: tlsConf, DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second,
		WriteTimeout: 2 * time.Second, MaxRetries: -1, DisableIdentity: true, PoolSize: 1,
	})
}

// readLive asks the master (as admin) for what a refresh compares with the Spec.
func readLive(ctx context.Context, addr, password string, tlsConf *tls.Config) (Live, error) {
	c := adminClient(addr, password, tlsConf)
	defer c.Close()
	var live Live
	info, err := c.Info(ctx, "server", "persistence", "replication").Result()
	if err != nil {
		return live, fmt.Errorf("INFO: %w", err)
	}
	fields := ParseInfo(info)
	live.RunID = fields["run_id"]
	live.PID, _ = strconv.Atoi(fields["process_id"])
	live.AOFEnabled = fields["aof_enabled"] == "1"
	if fields["role"] == "slave" {
		live.ReplicaOf = fields["master_host"] + " " + fields["master_port"]
	}
	for _, name := range []string{"appendonly", "appendfsync", "no-appendfsync-on-rewrite", "maxmemory", "maxmemory-policy"} {
		v, err := c.ConfigGet(ctx, name).Result()
		if err != nil {
			return live, fmt.Errorf("CONFIG GET %s: %w", name, err)
		}
		switch name {
		case "appendonly":
			live.AppendOnly = v[name]
		case "no-appendfsync-on-rewrite":
			live.NoAppendfsyncOnRewrite = v[name]
		case "appendfsync":
			live.AppendFsync = v[name]
		case "maxmemory":
			live.MaxMemory, _ = strconv.ParseInt(v[name], 10, 64)
		case "maxmemory-policy":
			live.MaxMemoryPolicy = v[name]
		}
	}
	return live, nil
}

// ParseInfo splits an INFO reply into its fields.
func ParseInfo(info string) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(info))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimSpace(sc.Text()), ":"); ok {
			out[k] = v
		}
	}
	return out
}
