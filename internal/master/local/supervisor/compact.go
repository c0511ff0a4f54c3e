package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// compactTimeout bounds compactAOF: a clean stop waits at most this long for the rewrite.
const compactTimeout = 5 * time.Second

// compactPause is how long compactAOF pauses writes: past compactTimeout, so that none lands
// between the rewrite and the shutdown right after it. The shutdown disconnects the writers
// that wait; should it fail, they go on when the pause ends.
const compactPause = compactTimeout + time.Second

// compactAOF rewrites the AOF of the master c describes from its memory, right before a clean
// stop. Releases are applied without being logged (redis.set_repl(redis.REPL_NONE)), so the
// AOF alone would bring every key released within the last TTL back at the next start, and
// a clean stop restarts at once. Writes are paused first (CLIENT PAUSE WRITE), so that none,
// logged or not, lands after the rewrite's fork.
//
// It is best effort, bounded by ctx and compactTimeout: on failure it logs why and the stop
// goes on as without it (the released keys then block their names on this master until
// they expire).
func compactAOF(ctx context.Context, c Config, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(ctx, compactTimeout)
	defer cancel()
	started := time.Now()
	client := adminClient(c)
	defer client.Close()
	if err := rewriteAOF(ctx, client); err != nil {
		log.Warn("AOF not rewritten before the clean stop (best effort; the stop goes on): keys released since the last rewrite come back at the next start until they expire",
			"err", err, "elapsed", time.Since(started).String())
		return
	}
	log.Info("AOF rewritten before the clean stop", "elapsed", time.Since(started).String())
}

// rewriteAOF pauses writes, then rewrites the AOF with a rewrite that starts after the
// pause, and waits for its result.
func rewriteAOF(ctx context.Context, client *redis.Client) error {
	if err := client.Do(ctx, "client", "pause", compactPause.Milliseconds(), "write").Err(); err != nil {
		return fmt.Errorf("CLIENT PAUSE: %w", err)
	}
	for {
		// "started", or "scheduled" behind another child (BGSAVE): either way it forks after
		// the pause.
		err := client.BgRewriteAOF(ctx).Err()
		var reply redis.Error
		if errors.As(err, &reply) && strings.Contains(reply.Error(), "already in progress") {
			// It forked before the pause and misses what changed since: let it finish, then
			// start ours.
			if _, err := waitRewrite(ctx, client); err != nil {
				return fmt.Errorf("wait for the rewrite already in progress: %w", err)
			}
			continue
		}
		if err != nil {
			return fmt.Errorf("BGREWRITEAOF: %w", err)
		}
		status, err := waitRewrite(ctx, client)
		if err != nil {
			return err
		}
		if status != "ok" {
			return fmt.Errorf("rewrite failed: aof_last_bgrewrite_status:%s (see the redis-server log)", status)
		}
		return nil
	}
}

// waitRewrite polls INFO persistence until no AOF rewrite runs or is scheduled, and returns
// aof_last_bgrewrite_status. A reply slower than the client's read timeout (a loaded
// machine) is asked for again while ctx lasts: the poll only reads.
func waitRewrite(ctx context.Context, client *redis.Client) (status string, err error) {
	for {
		info := client.InfoMap(ctx, "persistence")
		if err := info.Err(); err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && ctx.Err() == nil {
				continue
			}
			return "", fmt.Errorf("INFO persistence: %w", err)
		}
		running, scheduled := info.Item("Persistence", "aof_rewrite_in_progress"), info.Item("Persistence", "aof_rewrite_scheduled")
		if running == "" || scheduled == "" {
			return "", errors.New("INFO persistence: no aof_rewrite_in_progress or aof_rewrite_scheduled field")
		}
		if running == "0" && scheduled == "0" {
			return info.Item("Persistence", "aof_last_bgrewrite_status"), nil
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("rewrite still running (in progress %s, scheduled %s): %w", running, scheduled, ctx.Err())
		case <-time.After(pollInterval):
		}
	}
}
