package audit

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// WriteForeignLockMetrics writes what the audit found of foreign locks (foreign.go) in
// the Prometheus text format, for node_exporter's textfile collector (`lockagent validate
// --metrics-file`), which monitoring/redlock.rules.yml's RedlockForeignLockUnbounded
// reads:
//
//	redlock_audit_foreign_locks_unbounded{endpoint,user}  keys over the limit in the sample
//	redlock_audit_foreign_keys_sampled{endpoint}          keys sampled on the master
//	redlock_audit_foreign_lock_limit_seconds              the limit (max_lock_ttl + slack,
//	                                                      at most the hold less the drift)
//
// A sampled user with no such key gets 0, so an alert resolves once its keys are bounded
// again. Only masters whose users were read appear. The label is endpoint, not master:
// the file is written on the host that ran the audit, whose own target may carry a
// master label.
func (r *Report) WriteForeignLockMetrics(w io.Writer) error {
	var b strings.Builder
	family := func(name, help string) {
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s gauge\n", name, help, name)
	}
	family("redlock_audit_foreign_locks_unbounded",
		"Keys of a lock user (one that may run SET, EVAL or EVALSHA on its keys) whose TTL is above the limit or absent, in the audit's bounded sample: the restart hold does not cover them.")
	for _, m := range r.Masters {
		counts := map[string]int{}
		for _, u := range m.ForeignUsers {
			counts[u] = 0
		}
		for _, f := range m.ForeignLocks {
			counts[f.User]++
		}
		users := make([]string, 0, len(counts))
		for u := range counts {
			users = append(users, u)
		}
		sort.Strings(users)
		for _, u := range users {
			fmt.Fprintf(&b, "redlock_audit_foreign_locks_unbounded{endpoint=%s,user=%s} %d\n", labelValue(m.Endpoint), labelValue(u), counts[u])
		}
	}
	family("redlock_audit_foreign_keys_sampled", "Keys of lock users that the audit looked at on the master (SCAN of their patterns, bounded).")
	for _, m := range r.Masters {
		if m.usersRead {
			fmt.Fprintf(&b, "redlock_audit_foreign_keys_sampled{endpoint=%s} %d\n", labelValue(m.Endpoint), m.ForeignKeysSampled)
		}
	}
	family("redlock_audit_foreign_lock_limit_seconds", "The largest TTL the audit accepts for such a key: max_lock_ttl plus the wait queue's hand-off slack, at most the restart hold less the drift margin (the smallest over the masters).")
	t := Target{MaxLockTTL: r.MaxLockTTL, RestartDelay: r.RestartDelay, DriftFactor: r.DriftFactor}
	limit := ForeignLockLimit(r.MaxLockTTL)
	for _, m := range r.Masters {
		limit = min(limit, m.foreignLockLimit(t))
	}
	fmt.Fprintf(&b, "redlock_audit_foreign_lock_limit_seconds %s\n", strconv.FormatFloat(limit.Seconds(), 'f', -1, 64))
	_, err := io.WriteString(w, b.String())
	return err
}

// labelValue quotes v as a label value of the text format.
func labelValue(v string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`).Replace(v) + `"`
}
