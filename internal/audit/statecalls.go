package audit

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/redis/go-redis/v9"
)

// A setting changed and changed back between two audits (appendfsync no, then always
// again) looks the same to both: each reads the safe value. The server counts every
// command it runs (INFO commandstats), so the audit records how often each command that
// changes the deployment has run; Changes then sees any such command run in between, even
// one whose effect was undone, and CONFIG RESETSTAT shows as counts that went down.

// notStateChanges are the commands the server marks dangerous or administrative (see
// ServerCommand.Why) that read, or act on connections or snapshots, without changing the
// deployment: the audit itself, monitoring and backups run them.
var notStateChanges = []string{
	"config|get", "acl|users", "acl|getuser", "acl|dryrun", "acl|whoami", "acl|list", "acl|cat",
	"acl|log", "acl|genpass", "keys", "monitor", "lastsave", "role", "bgsave", "save",
	"bgrewriteaof", "select", "replconf", "module|list",
}

// changesState reports whether c, run by anyone, changes the deployment.
func (c ServerCommand) changesState() bool {
	switch {
	case c.Why() == "",
		slices.Contains(MonitoringCommands, c.Name), slices.Contains(notStateChanges, c.Name),
		strings.HasPrefix(c.Name, "client|"), strings.HasPrefix(c.Name, "script|"),
		strings.HasPrefix(c.Name, "latency|"), strings.HasPrefix(c.Name, "slowlog|"),
		strings.HasPrefix(c.Name, "memory|"), strings.HasPrefix(c.Name, "pubsub|"):
		return false
	}
	return true
}

// readStateCalls reads INFO commandstats and keeps the calls of the state-changing
// commands. Without the command table (checkUsers said why) nothing is kept; a master
// whose counts cannot be read has the gap recorded, as any other unchecked check.
func (m *Master) readStateCalls(ctx context.Context, c *redis.Client, t Target) {
	if len(m.commands) == 0 {
		return
	}
	text, err := nodeCall(ctx, t.NodeTimeout, func(ctx context.Context) (string, error) { return c.Info(ctx, "commandstats").Result() })
	if err != nil {
		m.uncheck("how often commands that change the deployment have run (INFO commandstats) could not be read", err)
		return
	}
	calls := map[string]string{}
	for k, v := range parseInfo(text) {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		for _, field := range strings.Split(v, ",") {
			if n, ok := strings.CutPrefix(field, "calls="); ok {
				calls[strings.ToLower(name)] = n
			}
		}
	}
	var out []string
	for _, cmd := range m.commands {
		if n, ok := calls[cmd.Name]; ok && cmd.changesState() {
			out = append(out, fmt.Sprintf("%s=%s", cmd.Name, n))
		}
	}
	sort.Strings(out)
	m.stateCalls = "[" + strings.Join(out, " ") + "]"
}
