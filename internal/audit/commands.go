package audit

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// What a user other than the admin must not be able to run is read from the server itself
// (COMMAND), for the version at hand, rather than kept as a list here: a new command, or
// an alias such as SLAVEOF next to REPLICAOF, is covered the day the server marks it.

// ServerCommand is one command or subcommand as COMMAND reports it.
type ServerCommand struct {
	Name       string   // "set", "config|set"
	Arity      int      // as COMMAND reports it: n exactly, -n at least n words
	Flags      []string // "write", "admin", "noscript", ...
	Categories []string // "@admin", "@dangerous", "@scripting", ...
	// Keyed is true when the command names keys (a first key, or key specs): a key
	// pattern confines it.
	Keyed bool
}

// words is the command as typed: "config|set" -> CONFIG SET.
func (c ServerCommand) words() []string { return strings.Split(c.Name, "|") }

// Why says why a user other than the admin must not run c, or "" when it may: the server
// marks it @admin or @dangerous (CONFIG, REPLICAOF and SLAVEOF, SHUTDOWN, FAILOVER, DEBUG,
// CLIENT KILL, MIGRATE, RESTORE, FLUSHALL, KEYS, ACL ...), it writes scripts or functions
// every client runs (FUNCTION LOAD/DELETE/RESTORE/FLUSH), it writes without naming a key
// (which no key pattern can confine), or it switches the database (SELECT: clients on
// different databases do not exclude each other, and the server does not flag it).
func (c ServerCommand) Why() string {
	switch {
	case slices.Contains(c.Categories, "@admin"):
		return "@admin"
	case slices.Contains(c.Categories, "@dangerous"):
		return "@dangerous"
	case slices.Contains(c.Categories, "@scripting") && slices.Contains(c.Flags, "write"):
		return "writes scripts"
	case slices.Contains(c.Flags, "write") && !c.Keyed:
		return "keyless write"
	case c.Name == "select":
		return "switches database"
	}
	return ""
}

// MonitoringCommands may be run by a keyless user (a monitoring user that reaches no key
// and so writes nothing) without being a finding, although the server marks some of them
// @admin or @dangerous: they read statistics. CONFIG GET is not among them: it reveals
// every password in the configuration.
var MonitoringCommands = []string{
	"ping", "info", "client|list", "client|info", "slowlog|get", "slowlog|len",
	"latency|latest", "latency|history", "latency|doctor", "memory|stats",
	"command", "command|count", "command|docs", "command|info", "command|list",
	"command|getkeys", "command|getkeysandflags",
}

// readCommands reads the server's command table; only runnable entries are kept (a command
// with subcommands runs only as one of them).
func readCommands(ctx context.Context, c *redis.Client) ([]ServerCommand, error) {
	reply, err := c.Do(ctx, "COMMAND").Slice()
	if err != nil {
		return nil, err
	}
	var out []ServerCommand
	var walk func(entries []any) error
	walk = func(entries []any) error {
		for _, e := range entries {
			f, ok := e.([]any)
			if !ok || len(f) < 7 {
				return fmt.Errorf("COMMAND: unexpected entry %v", e)
			}
			cmd := ServerCommand{Name: strings.ToLower(fmt.Sprint(f[0])), Arity: toInt(f[1]),
				Flags: toStrings(f[2]), Keyed: toInt(f[3]) != 0, Categories: toStrings(f[6])}
			if len(f) >= 9 {
				specs, _ := f[8].([]any)
				cmd.Keyed = cmd.Keyed || len(specs) > 0
			}
			var subs []any
			if len(f) >= 10 {
				subs, _ = f[9].([]any)
			}
			if len(subs) > 0 {
				if err := walk(subs); err != nil {
					return err
				}
				continue
			}
			out = append(out, cmd)
		}
		return nil
	}
	if err := walk(reply); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("COMMAND: empty command table")
	}
	return out, nil
}

func toInt(v any) int {
	switch x := v.(type) {
	case int64:
		return int(x)
	case int:
		return x
	}
	return 0
}

func toStrings(v any) []string {
	var out []string
	switch x := v.(type) {
	case []any:
		for _, e := range x {
			out = append(out, strings.ToLower(fmt.Sprint(e)))
		}
	case map[any]any: // a RESP3 set decoded as a map
		for k := range x {
			out = append(out, strings.ToLower(fmt.Sprint(k)))
		}
	}
	return out
}

// dangerousCommands keeps the commands of table a user other than the admin must not run.
func dangerousCommands(table []ServerCommand) []ServerCommand {
	var out []ServerCommand
	for _, c := range table {
		if c.Why() != "" {
			out = append(out, c)
		}
	}
	return out
}

// hashWriteCommands keeps the commands of table that write a hash (HSET, HINCRBY, ...):
// what could rewrite the restart delay a runtime publishes (hold.DeploymentKey).
func hashWriteCommands(table []ServerCommand) []ServerCommand {
	var out []ServerCommand
	for _, c := range table {
		if slices.Contains(c.Categories, "@hash") && slices.Contains(c.Flags, "write") {
			out = append(out, c)
		}
	}
	return out
}

// dryRunArgs is ACL DRYRUN's argument list asking whether user may run cmd: the command's
// words, then as many copies of key as its arity needs (DRYRUN checks the arity; key is
// within the user's own key patterns, so that the answer is about the command, not the key).
func dryRunArgs(user string, cmd ServerCommand, key string) []any {
	words := cmd.words()
	n := cmd.Arity
	if n < 0 {
		n = -n
	}
	args := []any{"ACL", "DRYRUN", user}
	for _, w := range words {
		args = append(args, w)
	}
	for i := len(words); i < n; i++ {
		args = append(args, key)
	}
	return args
}
