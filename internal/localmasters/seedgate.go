package localmasters

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// seedGate is the host gate's fence seeding rule (redisconf.ACLAtStartFor, the table
// redisconf.SeedScenarios) at every start of a master of a cluster started with
// Options.SeedFences: a data dir with no AOF, or with AOF files other than those its last
// clean stop (Shutdown) left, gets the rendered ACL file (lock users off), and the started
// master marks itself unseeded where it has no record, or whatever its record says after a
// restore, as a host rendered with seed_fences does (its gate and functions steps).
type seedGate struct {
	aclFile  string // the ACL file the server loads
	rendered string // the file as rendered: lock users off
	// vouched names the AOF files the last clean stop left (aofFiles; "": no clean stop
	// since the last start), the harness's clean marker; restored says the start found
	// others there.
	vouched  string
	restored bool
}

// cleanStop records the AOF files a clean stop left.
func (g *seedGate) cleanStop(dataDir string) {
	if g != nil {
		g.vouched = aofFiles(dataDir)
	}
}

// beforeStart remakes the ACL file from the rendered one when the rule says so.
func (g *seedGate) beforeStart(dataDir string) error {
	if g == nil {
		return nil
	}
	g.restored = g.vouched != "" && g.vouched != aofFiles(dataDir)
	g.vouched = "" // a marker counts for the start that follows it only
	if redisconf.ACLAtStartFor(true, dataDir, g.restored) == redisconf.KeepACLFile {
		return nil
	}
	if err := os.WriteFile(g.aclFile, []byte(g.rendered), 0o600); err != nil {
		return fmt.Errorf("seed gate: reset %s: %w", g.aclFile, err)
	}
	return nil
}

// afterStart marks the master unseeded unless it has a record (HSETNX). A master with no
// record loaded none, and a restored one the backup's (redisconf.MarkUnseeded): its files
// passed the start's rule but loaded nothing, or the ACL file it loaded may have the lock
// users on, so the rendered one is written and loaded first; then the mark, overwriting the
// record (a seeder seeds a marked master only, so it cannot turn them on in between).
func (g *seedGate) afterStart(ctx context.Context, admin *redis.Client) error {
	if g == nil {
		return nil
	}
	had, err := admin.HExists(ctx, audit.FenceSeedKey, audit.FenceSeedStateField).Result()
	if err != nil {
		return fmt.Errorf("seed gate: read %s: %w", audit.FenceSeedKey, err)
	}
	if redisconf.MarkUnseeded(had, g.restored) {
		if err := os.WriteFile(g.aclFile, []byte(g.rendered), 0o600); err != nil {
			return fmt.Errorf("seed gate: reset %s: %w", g.aclFile, err)
		}
		if err := admin.Do(ctx, "ACL", "LOAD").Err(); err != nil {
			return fmt.Errorf("seed gate: ACL LOAD of the rendered %s: %w", g.aclFile, err)
		}
		if g.restored {
			// The backup's record is replaced: its seeding (reason, sources) is not this master's.
			_, err = admin.TxPipelined(ctx, func(tx redis.Pipeliner) error {
				tx.Del(ctx, audit.FenceSeedKey)
				tx.HSet(ctx, audit.FenceSeedKey, audit.FenceSeedStateField, audit.FenceSeedUnseeded, audit.FenceSeedReasonField, "restored")
				return nil
			})
		} else {
			err = admin.HSet(ctx, audit.FenceSeedKey, audit.FenceSeedStateField, audit.FenceSeedUnseeded).Err()
		}
	} else {
		err = admin.HSetNX(ctx, audit.FenceSeedKey, audit.FenceSeedStateField, audit.FenceSeedUnseeded).Err()
	}
	if err != nil {
		return fmt.Errorf("seed gate: mark %s unseeded: %w", audit.FenceSeedKey, err)
	}
	return nil
}

// aofFiles names the AOF files in dataDir as they are now ("name size mtime inode" each,
// by name), as the runtimes' clean markers do; "none" when there are none.
func aofFiles(dataDir string) string {
	entries, err := os.ReadDir(filepath.Join(dataDir, redisconf.AOFDir))
	if err != nil || len(entries) == 0 {
		return "none"
	}
	var b strings.Builder
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			return "unreadable"
		}
		var ino uint64
		if st, ok := fi.Sys().(*syscall.Stat_t); ok {
			ino = st.Ino
		}
		fmt.Fprintf(&b, "%s %d %d %d\n", e.Name(), fi.Size(), fi.ModTime().UnixNano(), ino)
	}
	return b.String()
}
