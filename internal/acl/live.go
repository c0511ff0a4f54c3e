package acl

import (
	"fmt"
	"sort"
	"strings"
)

// ignoredFlags are flags ACL SETUSER's "reset" sets that do not change what a lock user
// may do: payload sanitizing only concerns RESTORE, which no lock user may run.
var ignoredFlags = map[string]bool{"sanitize-payload": true, "skip-sanitize-payload": true}

// parseGetUser reads an ACL GETUSER reply (RESP2: a flat list of names and values; RESP3:
// a map). found is false for a nil reply: no such user.
func parseGetUser(reply any) (d Definition, found bool, err error) {
	if reply == nil {
		return d, false, nil
	}
	fields := map[string]any{}
	switch r := reply.(type) {
	case []any:
		if len(r)%2 != 0 {
			return d, false, fmt.Errorf("ACL GETUSER: odd reply length %d", len(r))
		}
		for i := 0; i < len(r); i += 2 {
			fields[fmt.Sprint(r[i])] = r[i+1]
		}
	case map[any]any:
		for k, v := range r {
			fields[fmt.Sprint(k)] = v
		}
	default:
		return d, false, fmt.Errorf("ACL GETUSER: unexpected reply %T", reply)
	}
	for _, f := range stringList(fields["flags"]) {
		if !ignoredFlags[f] {
			d.Flags = append(d.Flags, f)
		}
	}
	sort.Strings(d.Flags)
	d.PasswordHashes = sortedCopy(stringList(fields["passwords"]))
	d.Keys = fmt.Sprint(orEmpty(fields["keys"]))
	d.Channels = fmt.Sprint(orEmpty(fields["channels"]))
	d.Commands = sortedCopy(strings.Fields(fmt.Sprint(orEmpty(fields["commands"]))))
	d.Selectors = len(stringOrList(fields["selectors"]))
	return d, true, nil
}

func stringList(v any) []string {
	list, _ := v.([]any)
	out := make([]string, 0, len(list))
	for _, e := range list {
		out = append(out, fmt.Sprint(e))
	}
	return out
}

func stringOrList(v any) []any {
	list, _ := v.([]any)
	return list
}

func orEmpty(v any) any {
	if v == nil {
		return ""
	}
	return v
}
