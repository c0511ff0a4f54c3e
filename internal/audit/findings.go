package audit

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"net"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/funclib"
	"github.com/redlock-kit/redlock-kit/internal/master/hold"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// busyThresholdLimit is the longest busy-reply-threshold the audit accepts without a
// warning: ten times the kit's setting.
const busyThresholdLimit = 10 * redisconf.BusyReplyThreshold * time.Millisecond

// findings turns what was measured into sentences, one each: which master, what is wrong,
// why it matters, and the fix. Problems break exclusion (or leave safety unknown); warnings
// cost fault tolerance or latency but keep every lock exclusive, such as a minority of
// masters down, which is what Redlock is built to survive. Order: deployment-wide first,
// then per master in endpoint order.
//
// Problems that are not evidence are also listed by class: denied (a refusal of the
// credentials or the ACL made something unreadable) and unknown (a master that did not
// answer in time, or a quorum that is not reachable). They stay problems for the
// redlock_audit data source, which fails closed; `lockagent validate` reports them as
// DENIED or INCONCLUSIVE rather than UNSAFE.
func findings(t Target, r *Report) (problems, warnings, denied, unknown, unchecked []string) {
	var ps, ws, ds, us, uc []string
	add := func(format string, args ...any) { ps = append(ps, fmt.Sprintf(format, args...)) }
	warn := func(format string, args ...any) { ws = append(ws, fmt.Sprintf(format, args...)) }
	// addAs adds a problem that is not evidence: class ClassDenied or anything else (unknown).
	addAs := func(class, format string, args ...any) {
		p := fmt.Sprintf(format, args...)
		ps = append(ps, p)
		if class == ClassDenied {
			ds = append(ds, p)
		} else {
			us = append(us, p)
		}
	}

	n := len(t.Endpoints)
	switch {
	case n < 3:
		add("The deployment lists %d master(s); Redlock needs at least 3 independent masters (5 recommended). Fix: add masters until there are 3 or 5.", n)
	case n%2 == 0:
		add("The deployment lists %d masters, an even count: a majority of %d tolerates no more failures than %d masters would. Fix: use an odd number of masters (%d or %d).", n, r.Quorum, n-1, n-1, n+1)
	}
	if r.Reachable < r.Quorum {
		addAs(ClassUnavailable, "Only %d of %d masters are reachable, fewer than the quorum of %d: no lock can be acquired. Fix: bring the unreachable masters back (see the per-master problems).", r.Reachable, n, r.Quorum)
	}
	if t.RestartDelay > 0 {
		if need := t.MaxLockTTL + r.Drift; t.RestartDelay < need {
			add("The restart delay %v is shorter than the max lock TTL %v plus the clock-drift margin %v: a master that crashed can rejoin while a lock it forgot is still held elsewhere, and hand it out again. Fix: set restart_delay to at least %v.",
				t.RestartDelay, t.MaxLockTTL, r.Drift, need)
		}
	}
	need := t.MaxLockTTL + r.Drift
	add2 := duplicateServers(r.Masters)
	ps = append(ps, add2...)

	offsetLimit := r.Drift
	rttLimit := time.Duration(float64(t.MaxLockTTL) * t.DriftFactor)
	for _, m := range r.Masters {
		ep := m.Endpoint
		certProblems, certWarnings := m.certFindings(time.Now())
		ps, ws = append(ps, certProblems...), append(ws, certWarnings...)
		if !m.Reachable {
			// Below the quorum the deployment-wide problem above already says no lock can be
			// taken; with a quorum left, locks stay exclusive and only fault tolerance is lost.
			warn("Master %s is unreachable (%s); it cannot vote, so the deployment tolerates one fewer failure. Fix: start it (a crashed master is held down for its restart delay, then restarts by itself), or check the address, credentials and TLS setting.", ep, m.Error)
			continue
		}
		if !m.audited {
			addAs(m.ErrorClass, "Master %s answered but could not be fully audited (%s), so its safety settings are unknown. Fix: run the audit with the admin user's credentials (CONFIG GET, INFO and TIME must be allowed) against a master that serves requests.", ep, m.Error)
		}
		if m.Role != "" && m.Role != "master" {
			where := ""
			if m.MasterHost != "" {
				where = " of " + m.MasterHost
			}
			add("Master %s is a %s%s, not an independent master: its keys come from another server, and a failover loses locks. Fix: run REPLICAOF NO ONE on %s (and remove any replicaof line from its config).", ep, m.Role, where, ep)
		}
		if m.ConnectedReplicas > 0 {
			add("Master %s has %d connected replica(s): a replica promoted after a crash misses acknowledged locks (replication is asynchronous). Fix: detach the replicas (REPLICAOF NO ONE on each); Redlock needs independent masters, not replication.", ep, m.ConnectedReplicas)
		}
		if m.audited && !m.AOFEnabled {
			add("Master %s has AOF off (appendonly no): a restart forgets every lock it held, and a second client can get a majority. Fix: CONFIG SET appendonly yes on %s and set appendonly yes in its config.", ep, ep)
		}
		if m.AppendFsync != "" && m.AppendFsync != redisconf.AppendFsync {
			add("Master %s has appendfsync %s: a lock it acknowledged can be lost in a crash or power loss before it reaches disk. Fix: CONFIG SET appendfsync always on %s (and in its config).", ep, m.AppendFsync, ep)
		}
		if m.NoAppendfsyncOnRewrite != "" && m.NoAppendfsyncOnRewrite != redisconf.NoAppendfsyncOnRewrite {
			add("Master %s has no-appendfsync-on-rewrite %s: during an AOF rewrite acknowledged locks are not fsynced. Fix: CONFIG SET no-appendfsync-on-rewrite no on %s (and in its config).", ep, m.NoAppendfsyncOnRewrite, ep)
		}
		if m.MaxMemoryPolicy != "" && m.MaxMemoryPolicy != redisconf.MaxmemoryPolicy {
			add("Master %s has maxmemory-policy %s: under memory pressure it evicts live lock keys. Fix: CONFIG SET maxmemory-policy noeviction on %s (and in its config).", ep, m.MaxMemoryPolicy, ep)
		}
		if t.TLS && m.PlainPort != "" && m.PlainPort != "0" {
			add("Master %s also serves plain text on port %s (tls-port %s): the deployment uses TLS, but passwords and lock tokens can still cross the network in clear there. Fix: set port 0 so that it serves TLS only (redlock_master and redlock_host_config with tls = true do this).", ep, m.PlainPort, m.TLSPort)
		}
		if m.audited && m.MaxMemory == 0 {
			add("Master %s has maxmemory 0 (unlimited): it can grow until the kernel kills it, a crash that loses its locks. Fix: CONFIG SET maxmemory to an explicit size such as 64mb on %s (and in its config).", ep, ep)
		}
		if m.audited && m.MaxMemory > 0 && m.SystemMemory > 0 && m.MaxMemory >= m.SystemMemory {
			add("Master %s has maxmemory %d bytes, at or above the machine's memory (%d bytes): the limit never applies, and the kernel kills the server first, a crash that loses its locks. Fix: CONFIG SET maxmemory to well below the machine's memory (such as 64mb for locks alone) on %s (and in its config).", ep, m.MaxMemory, m.SystemMemory, ep)
		}
		if s := m.AOFLastWriteStatus; s != "" && s != "ok" {
			add("Master %s reports aof_last_write_status %s: its last AOF write failed, so acknowledged locks may not be on disk. Fix: check the disk and the Redis log on %s, then restart it.", ep, s, ep)
		}
		if s := m.AOFLastBgrewriteStatus; s != "" && s != "ok" {
			add("Master %s reports aof_last_bgrewrite_status %s: its last AOF rewrite failed. Fix: check the disk space and the Redis log on %s.", ep, s, ep)
		}
		if m.audited && OffsetTooLarge(m.ClockOffset, m.RTT, offsetLimit) {
			add("Master %s's clock is %v away from this machine's (limit %v, the drift allowance for a %v TTL): clocks this far apart are not synchronised, and when one is corrected by a step every lock on that master expires early or late by that much. Fix: synchronise both clocks with NTP configured to slew, not step.", ep, roundDur(m.ClockOffset), offsetLimit, t.MaxLockTTL)
		}
		if m.audited && RateOff(m.ClockRate, m.ClockRateError, t.DriftFactor) {
			add("Master %s's clock runs at %.4f times this machine's rate (Redlock tolerates a difference of %.2f%%): its lock TTLs expire at a different real time than clients compute. Fix: fix the clock source on %s (NTP slewing, no manual time changes).", ep, m.ClockRate, t.DriftFactor*100, ep)
		}
		if m.RTT > rttLimit {
			warn("Master %s's round trip is %v, more than %.0f%% of the max lock TTL %v (%v): acquiring eats too much of the lock's validity. Fix: put the masters closer to the clients, or raise the max lock TTL.", ep, roundDur(m.RTT), t.DriftFactor*100, t.MaxLockTTL, rttLimit)
		}
		// Isolation is intended once a lock user is confined to a prefix: then a user with
		// every key (a leftover shared user, an EVAL user) breaks it. Users that all reach
		// every key are one application's (the lock user and its EVAL user, say).
		if m.TenantsChecked && len(m.LockUsers) > 1 && slices.ContainsFunc(m.LockUsers, LockUserACL.confined) {
			for _, u := range m.LockUsers {
				if u.Enabled && u.AllKeys() {
					add("Master %s has %d lock users and %s reaches every key: its clients can read, delete and overwrite every other application's locks. Fix: give %s its own key prefix (lock_users = { %s = { key_prefix = \"%s:\" } }).", ep, len(m.LockUsers), u.Name, u.Name, u.Name, u.Name)
				}
			}
			for _, leak := range m.TenantLeaks {
				add("Master %s does not isolate its lock users: %s. Fix: confine each lock user to its own key prefix and channels (lock_users), with no prefix starting with another.", ep, leak)
			}
		}
		if b := m.BusyReplyThreshold; m.BusyReplyThresholdMS() >= 0 && (b == 0 || b > busyThresholdLimit) {
			limit := "never"
			if b > 0 {
				limit = "only after " + b.String()
			}
			warn("Master %s answers BUSY and accepts SCRIPT KILL %s (busy-reply-threshold): a client allowed EVAL can stall it that long with a busy script, and the kit's supervisor cannot kill it sooner (the kit's functions run in microseconds). Fix: CONFIG SET busy-reply-threshold %d (the kit's redis.conf sets it).", ep, limit, redisconf.BusyReplyThreshold)
		}
		if m.ForgedFunctions {
			add("Master %s runs functions this kit's clients call with code that is not the kit's: %s. Every lock client that FCALLs them runs that code, which can grant a held lock again or release another client's. Fix: as the admin FUNCTION DELETE the library that registers them, then FUNCTION LOAD REPLACE the output of `lockagent functions` (or restart the master with the kit, which loads it at every start).", ep, strings.Join(m.ShadowedFunctions, ", "))
		}
		switch m.FunctionLibrary {
		case FunctionLibraryMissing:
			warn("Master %s does not have the kit's function library: lock users that may FCALL only cannot lock there (the library falls back to EVALSHA only for users allowed EVAL). Fix: restart the master with the kit (it loads the library at every start), or as the admin FUNCTION LOAD REPLACE the output of `lockagent functions`.", ep)
		case FunctionLibraryStale:
			warn("Master %s has another version (%s) of the kit's function library than this kit's (%s): clients of this version cannot FCALL their functions there. Fix: restart the master with this kit version, or as the admin FUNCTION LOAD REPLACE the output of `lockagent functions`.", ep, m.FunctionLibraryVersion, funclib.CurrentVersion())
		}
		for i, why := range append(slices.Clone(m.Unchecked), m.unestablished()...) {
			p := fmt.Sprintf("Master %s: a check could not be made: %s. The audit vouches only for what it saw. Fix: give the admin user the rights the audit needs (CONFIG GET, INFO, CLIENT INFO, ACL, COMMAND, HGETALL of %s) and keep those commands under their names (no rename-command), then audit again.", ep, why, hold.DeploymentKey)
			if i < len(m.uncheckedTransient) && m.uncheckedTransient[i] {
				addAs(ClassUnavailable, "%s", p) // no answer: a new audit may make it
				continue
			}
			addAs(ClassError, "%s", p)
			uc = append(uc, p)
		}
		if m.EndpointForwarded != "" {
			p := fmt.Sprintf("Endpoint %s is not the server's own address: %s. A port forward, NAT or proxy in between chooses where each connection goes and can send one to another server at any moment, which no check of a moment sees, so the audit cannot vouch for it. Fix: list the address and port the server itself listens on, with nothing in between.", ep, m.EndpointForwarded)
			addAs(ClassError, "%s", p)
			uc = append(uc, p)
		}
		if len(m.ConnectionRunIDs) > 1 {
			add("Endpoint %s reaches more than one server: its connections saw run_ids %s. A balancer or NAT in front of several servers lets two clients each count its vote from a different server, so two of them can hold the same lock. Fix: list each master's own address, one redis-server per endpoint, with nothing in between that spreads connections.", ep, strings.Join(m.ConnectionRunIDs, ", "))
		}
		if m.Anonymous == AnonymousAllowed {
			add("Master %s lets a client without credentials in (protected-mode %s, bind %s): anyone who can reach it can run whatever the default user may, up to CONFIG SET and FLUSHALL. Fix: set requirepass to the admin password (CONFIG SET requirepass ... and in its config), or make the default user need a password (ACL SETUSER default resetpass >...).", ep, orQ(m.ProtectedMode), orQ(m.Bind))
		}
		for _, u := range append(slices.Clone(m.LockUsers), derefUsers(m.Admin)...) {
			switch {
			case !u.Enabled:
			case u.NoPass:
				add("Master %s lets user %s log in with any password or none (nopass): anyone who can reach the master is %s, with its rights. Fix: ACL SETUSER %s resetpass >a-long-secret (and in the ACL file or config the master loads).", ep, u.Name, u.Name, u.Name)
			case u.Passwords == 0:
				add("Master %s has user %s enabled with no password: nothing proves who may log in as it, and one nopass or a password added later opens it. Fix: give it a password (ACL SETUSER %s >a-long-secret) or switch it off (ACL SETUSER %s off).", ep, u.Name, u.Name, u.Name)
			}
		}
		for _, f := range passwordFindings(append(slices.Clone(m.LockUsers), derefUsers(m.Admin)...)) {
			add("Master %s: %s. Fix: give every user a long password of its own (ACL SETUSER <user> <old-password >new-password, or resetpass >new-password), and in the ACL file or config the master loads.", ep, f)
		}
		for _, u := range m.LockUsers {
			if u.Enabled && len(u.Dangerous) > 0 {
				add("Master %s lets user %s run %s, which the server marks as administrative or dangerous or which rewrite the functions every client calls (CONFIG GET also reveals every password): any client with %s's password can switch off durability, drop or move every lock, stop or re-point the master, or replace the lock functions. Fix: ACL SETUSER %s -@all plus only what it needs (a lock user: redisconf.LockUserCommands; a monitoring user: no keys and read-only commands).", ep, u.Name, strings.Join(u.Dangerous, ", "), u.Name, u.Name)
			}
		}
		for _, u := range m.LockUsers {
			if u.Enabled && len(u.WritesDeployment) > 0 {
				add("Master %s lets user %s run %s on %s: any client with %s's password can rewrite the restart delay the master's runtime publishes, and make a master that rejoins at once look held down. Fix: ACL SETUSER %s -@hash (a lock user needs no hash command), or confine its keys to its own prefix.", ep, u.Name, strings.Join(u.WritesDeployment, ", "), hold.DeploymentKey, u.Name, u.Name)
			}
		}
		if p := m.foreignLockProblem(t, cmp.Or(t.RestartDelay, m.PublishedRestartDelay)); p != "" {
			add("%s", p)
		}
		if m.DeploymentError != "" {
			add("Master %s: %s, so nothing shows that it stays down after a crash for the max lock TTL plus the drift margin (%v) before it rejoins. Fix: run it under the kit's runtime (redlock_master's supervisor, or the host gate of redlock_host_config), which publishes %s.%s at every start.", ep, m.DeploymentError, need, hold.DeploymentKey, hold.FieldRestartDelayMS)
		} else if m.deploymentRead {
			if m.ConfigUncompared {
				warn("Master %s's runtime (%s) does not compare the server's config file on disk with the one it rendered (%s has no %s: a host provisioned by an earlier version): a hand edit of the file (appendfsync, the data dir) goes unseen until a start loads it. Fix: replace the host with this version's user-data.", ep, m.Runtime, hold.DeploymentKey, hold.FieldConfigDrift)
			}
			switch {
			case hold.Volatile(m.DataFS):
				add("Master %s keeps its data dir on %s, which a reboot or power loss empties: appendfsync always fsyncs into memory there, so after a machine crash the master starts empty, its fence registers from zero (fences go back) and its restart-hold records gone. Fix: put the data dir on a disk (data_dir on redlock_master; the hosts' /var/lib/redis* on the instance's disk, not a tmpfs mount).", ep, m.DataFS)
			case m.DataFS == "":
				warn("Master %s's runtime (%s) does not say what storage its data dir is on (%s has no %s: an earlier version's runtime): a data dir on tmpfs, emptied by a reboot, would go unseen. Fix: restart the master under this version's runtime (hosts: replace it with this version's user-data).", ep, m.Runtime, hold.DeploymentKey, hold.FieldDataFS)
			}
			if m.PublishedRestartDelay < need {
				add("Master %s's runtime (%s) holds it down for %v after a crash, less than the max lock TTL %v plus the drift margin %v: it can rejoin while a lock it forgot is still held elsewhere, and hand it out again. Fix: set restart_delay to at least %v on the master (and in agent.json).", ep, m.Runtime, m.PublishedRestartDelay, t.MaxLockTTL, r.Drift, need)
			}
			switch {
			case t.RestartDelay > 0 && m.PublishedRestartDelay < t.RestartDelay:
				add("Master %s's runtime (%s) publishes a restart delay of %v but the configuration says %v: one of them is stale. Fix: make agent.json's restart_delay match the deployment (the module's agent_config output does).", ep, m.Runtime, m.PublishedRestartDelay, t.RestartDelay)
			case t.RestartDelay > 0 && m.PublishedRestartDelay > t.RestartDelay:
				// Held longer than configured: a lowered delay whose floor (locks granted
				// under the larger one) has not lapsed yet; the runtime republishes as it does.
				warn("Master %s's runtime (%s) holds it down for %v after a crash, more than the configuration's %v: a lowered restart_delay whose earlier locks have not expired yet (it drops to %v when they have), or a stale agent.json.", ep, m.Runtime, m.PublishedRestartDelay, t.RestartDelay, t.RestartDelay)
			}
		}
		if len(m.DatasetReplaced) > 0 {
			add("Master %s's dataset may have been replaced since it started (%s): the lock keys and fence registers it held may be gone while it served on, with no hold, so a lock it granted can be granted again and fences can go back. Fix: take it down so that its runtime holds it (kill it, or stop it and remove its data: restart_delay, and with seed_fences a new seeding), which also starts these counts afresh.", ep, strings.Join(m.DatasetReplaced, "; "))
		}
		seedProblems, seedWarnings := m.fenceSeedFindings()
		ps, ws = append(ps, seedProblems...), append(ws, seedWarnings...)
		if m.LockUserChecked {
			if m.LockUserCanEval {
				warn("Master %s lets the lock user run EVAL: any lock client can run Lua of its own, such as a busy loop that stalls the master until busy-reply-threshold and a SCRIPT KILL. Fix: restrict the lock user to FCALL of the kit's function library (redisconf.LockUserCommands) and give clients that need EVAL (other Redlock clients) a user of their own.", ep)
			}
			switch {
			case m.LockUserError != "":
				class := ClassUnavailable
				if DeniedText(m.LockUserError) {
					class = ClassDenied
				}
				addAs(class, "Master %s refused the lock user (%s): lock clients cannot vote there. Fix: create the restricted lock user with the password the clients use (the redlock_master resource does this).", ep, m.LockUserError)
			case m.LockUserCanConfig:
				add("Master %s lets the lock user run CONFIG: any lock client can switch off its safety settings. Fix: restrict the lock user's ACL to the lock commands (see redisconf.LockUserCommands).", ep)
			}
		}
	}
	return ps, ws, ds, us, uc
}

// unestablished names the checks that neither passed, failed nor recorded why they could
// not be made: a safety net, so that a check that silently did not run fails closed too.
// Only consulted for a master with no other unchecked entry (one is enough to make the
// verdict unknown).
func (m Master) unestablished() []string {
	if len(m.Unchecked) > 0 {
		return nil
	}
	var out []string
	if !m.deploymentRead && m.DeploymentError == "" {
		out = append(out, "the restart delay the master publishes was not read")
	}
	if !m.usersRead {
		out = append(out, "the users were not read")
	}
	if !m.continuityRead {
		out = append(out, "whether the dataset was replaced since the start was not read")
	}
	for _, u := range m.LockUsers {
		if u.Enabled && !u.DangerousChecked {
			out = append(out, "the rights of user "+u.Name+" were not asked")
		}
	}
	if m.Anonymous == "" {
		out = append(out, "whether clients without credentials are refused was not tried")
	}
	if m.RunID != "" && len(m.ConnectionRunIDs) == 0 {
		out = append(out, "whether every connection reaches the same server was not tried")
	}
	return out
}

func derefUsers(u *LockUserACL) []LockUserACL {
	if u == nil {
		return nil
	}
	return []LockUserACL{*u}
}

func orQ(s string) string {
	if s == "" {
		return "unknown"
	}
	return strconv.Quote(s)
}

// OneMachineNotice is what validate says of masters that all run on one machine.
const OneMachineNotice = "one machine: for trying the kit, not independent"

// independence says whether the endpoints can be independent: all on loopback, or all on
// one address, is one machine (its disk, kernel, clock and power are shared, so one event
// can take a majority). Host names are resolved (lookup bounds each); a name that cannot be
// resolved counts as its own address.
func independence(ctx context.Context, endpoints []string, lookup time.Duration) (oneMachine bool, says string) {
	resolved := make([][]string, len(endpoints))
	var wg sync.WaitGroup
	for i, e := range endpoints {
		h, _, _ := net.SplitHostPort(e)
		h = strings.ToLower(strings.Trim(h, "[]"))
		resolved[i] = []string{h}
		if net.ParseIP(h) != nil || h == "localhost" {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			lctx, cancel := context.WithTimeout(ctx, lookup)
			defer cancel()
			if found, err := net.DefaultResolver.LookupHost(lctx, h); err == nil && len(found) > 0 {
				resolved[i] = found
			}
		}()
	}
	wg.Wait()
	addrs := map[string]bool{}
	loopback := true
	for _, ips := range resolved {
		sort.Strings(ips)
		addrs[strings.Join(ips, ",")] = true
		for _, a := range ips {
			ip := net.ParseIP(a)
			loopback = loopback && (a == "localhost" || (ip != nil && ip.IsLoopback()))
		}
	}
	if loopback || len(addrs) == 1 {
		return true, OneMachineNotice
	}
	return false, fmt.Sprintf("%d addresses: independent only when each master runs on its own host (ideally its own failure domain)", len(addrs))
}

// duplicateServers finds endpoints that reach the same redis-server (same run_id): a
// quorum counted over them counts one server several times.
func duplicateServers(masters []Master) []string {
	byRunID := map[string][]string{}
	for _, m := range masters {
		if m.RunID != "" {
			byRunID[m.RunID] = append(byRunID[m.RunID], m.Endpoint)
		}
	}
	var out []string
	for runID, eps := range byRunID {
		if len(eps) > 1 {
			out = append(out, fmt.Sprintf("Endpoints %s reach the same server (run_id %s): its vote is counted %d times, so a quorum can be reached with fewer independent masters than it claims. Fix: list each master once, each a separate redis-server.", strings.Join(eps, ", "), runID, len(eps)))
		}
	}
	sort.Strings(out)
	return out
}

// OffsetTooLarge reports whether a measured clock offset exceeds limit even after the
// measurement's uncertainty (half the round trip) is given the benefit of the doubt.
func OffsetTooLarge(offset, rtt, limit time.Duration) bool {
	if offset < 0 {
		offset = -offset
	}
	return offset-rtt/2 > limit
}

// RateOff reports whether a measured clock rate differs from 1 by more than driftFactor
// beyond the measurement's error bound. An unmeasurable rate (NaN) is reported as off.
func RateOff(rate, errBound, driftFactor float64) bool {
	if math.IsNaN(rate) {
		return true
	}
	return math.Abs(rate-1)-errBound > driftFactor
}

func roundDur(d time.Duration) time.Duration {
	switch {
	case d >= time.Second || d <= -time.Second:
		return d.Round(time.Millisecond)
	case d >= time.Millisecond || d <= -time.Millisecond:
		return d.Round(10 * time.Microsecond)
	default:
		return d.Round(time.Microsecond)
	}
}
