package audit

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Changes compares two audits of the same endpoints (validate audits before and after its
// contention phase) and says, one sentence each, what changed on a master in between: a
// deployment that is safe only while it is being looked at is not safe. Only settings
// read in both audits are compared; what the second could not read is its own finding.
func Changes(before, after *Report) []string {
	var out []string
	for i := range before.Masters {
		if i >= len(after.Masters) {
			break
		}
		b, a := before.Masters[i].settings(), after.Masters[i].settings()
		names := make([]string, 0, len(b))
		for name := range b {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			if av, ok := a[name]; ok && av != b[name] {
				out = append(out, fmt.Sprintf("Master %s changed while validate ran: %s was %s, is now %s. Whatever changes it (an operator, a script, a client with too many rights, a restart) can undo the deployment's safety at any time. Fix: find what changed it and stop it, then validate again.",
					before.Masters[i].Endpoint, name, b[name], av))
			}
		}
	}
	return out
}

// settings are what Changes compares: every safety-relevant value that was read.
func (m Master) settings() map[string]string {
	s := map[string]string{}
	if !m.Reachable {
		return s
	}
	if m.infoRead {
		s["run_id (a restart or another server)"] = m.RunID
		s["role"] = m.Role
		s["connected replicas"] = strconv.Itoa(m.ConnectedReplicas)
		s["aof_last_write_status"] = m.AOFLastWriteStatus
	}
	if m.configRead {
		s["appendonly"] = strconv.FormatBool(m.AOFEnabled)
		s["appendfsync"] = m.AppendFsync
		s["no-appendfsync-on-rewrite"] = m.NoAppendfsyncOnRewrite
		s["maxmemory"] = strconv.FormatInt(m.MaxMemory, 10)
		s["maxmemory-policy"] = m.MaxMemoryPolicy
	}
	if m.Anonymous != "" {
		s["access without credentials"] = m.Anonymous
	}
	if m.ProtectedMode != "" || m.Bind != "" {
		s["protected-mode"], s["bind"] = m.ProtectedMode, m.Bind
	}
	if m.deploymentRead {
		s["published restart delay"] = m.PublishedRestartDelay.String()
		s["runtime"] = m.Runtime
	}
	if m.busyRead {
		s["busy-reply-threshold"] = m.BusyReplyThreshold.String()
	}
	if m.FunctionLibrary != "" {
		s["function library"] = m.FunctionLibrary + " " + m.FunctionLibraryVersion + " " + strings.Join(m.ShadowedFunctions, ",")
	}
	if m.stateCalls != "" {
		s["commands that change the deployment run since it started (INFO commandstats)"] = m.stateCalls
	}
	if m.usersRead {
		var users []string
		for _, u := range append(append([]LockUserACL{}, m.LockUsers...), derefUsers(m.Admin)...) {
			users = append(users, u.describe())
		}
		s["users"] = "[" + strings.Join(users, "; ") + "]"
	}
	return s
}

// describe is u in one line, for comparing two audits.
func (u LockUserACL) describe() string {
	return fmt.Sprintf("%s on=%v nopass=%v passwords=%d keys=%v channels=%v selectors=%d dangerous=%v writes-deployment=%v",
		u.Name, u.Enabled, u.NoPass, u.Passwords, u.Keys, u.Channels, u.Selectors, u.Dangerous, u.WritesDeployment)
}
