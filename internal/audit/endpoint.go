package audit

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/pki"
)

// An endpoint names one server only if nothing between the client and the server decides
// where a connection goes. The identity checks (several connections, the run_id the
// deployment record names, validate's identity marker) see a forwarder that spreads
// connections while they look; a port forward, NAT or proxy that reaches one server now can
// reach another one later, unseen. So on every connection its admin client opens, the audit
// compares the address it dialled with the address the server says the connection reached
// (CLIENT INFO's laddr): a forwarder to another address or port shows as a difference,
// whatever the server's bind (a wildcard, a hostname) and whatever a hostname resolves to.
// One that reaches the server at the very address dialled (a floating IP, IPVS direct
// routing, a gateway in another network namespace) does not. It also reads the run_id
// there: a connection opened again mid-audit must reach the server the first did.

// connIdentities records, for the admin client's connections (one at a time: PoolSize 1),
// the address each was dialled at, the run_id and the local address the server reports.
type connIdentities struct {
	mu       sync.Mutex
	dialled  string   // the remote address of the last connection dialled
	ids      []string // distinct run_ids reached
	forwards []string // connections whose server end is not the address dialled
	errs     []string
}

// dialer wraps the client's dialer (opts.Dialer, or a plain TCP dial plus TLS as go-redis's
// own would) so that the address each connection reached is recorded.
func (ci *connIdentities) dialer(opts *redis.Options) func(ctx context.Context, network, addr string) (net.Conn, error) {
	base, wrapTLS := opts.Dialer, false
	if base == nil {
		d := &net.Dialer{Timeout: opts.DialTimeout}
		base, wrapTLS = d.DialContext, opts.TLSConfig != nil
	}
	record := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := base(ctx, network, addr)
		if err == nil {
			ci.mu.Lock()
			ci.dialled = c.RemoteAddr().String()
			ci.mu.Unlock()
		}
		return c, err
	}
	if wrapTLS {
		return pki.WrapDialer(record, opts.TLSConfig)
	}
	return record
}

// onConnect is redis.Options's OnConnect: INFO server and CLIENT INFO in one round trip.
func (ci *connIdentities) onConnect(ctx context.Context, cn *redis.Conn) error {
	var info, client *redis.StringCmd
	_, _ = cn.Pipelined(ctx, func(p redis.Pipeliner) error {
		info = p.Info(ctx, "server")
		client = redis.NewStringCmd(ctx, "client", "info")
		_ = p.Process(ctx, client)
		return nil
	})
	ci.mu.Lock()
	defer ci.mu.Unlock()
	id := parseInfo(info.Val())["run_id"]
	switch {
	case info.Err() != nil:
		ci.note("INFO server: " + info.Err().Error())
	case id == "":
		ci.note("INFO server has no run_id")
	case !slices.Contains(ci.ids, id):
		ci.ids = append(ci.ids, id)
	}
	if client.Err() != nil {
		ci.note("CLIENT INFO (the server's end of the connection): " + client.Err().Error())
		return nil
	}
	if why := forwarded(ci.dialled, clientField(client.Val(), "laddr")); why != "" && !slices.Contains(ci.forwards, why) {
		ci.forwards = append(ci.forwards, why)
	}
	return nil // the connection is used; what it reached is judged after the audit
}

// note records an error once (ci.mu held).
func (ci *connIdentities) note(err string) {
	if !slices.Contains(ci.errs, err) {
		ci.errs = append(ci.errs, err)
	}
}

// clientField is one field of a CLIENT INFO line ("id=7 addr=... laddr=...").
func clientField(line, name string) string {
	for _, kv := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(kv, name+"="); ok {
			return v
		}
	}
	return ""
}

// forwarded says how the address dialled differs from the server's end of the connection
// (laddr: "ip:port", IPv6 without brackets), or "" when they are one address.
func forwarded(dialled, laddr string) string {
	d, err := netip.ParseAddrPort(dialled)
	if err != nil {
		return fmt.Sprintf("the address dialled (%q) is not an IP address and port", dialled)
	}
	i := strings.LastIndexByte(laddr, ':')
	if i < 0 {
		return fmt.Sprintf("the server reports no address for the connection (laddr %q)", laddr)
	}
	ip, err := netip.ParseAddr(strings.Trim(laddr[:i], "[]"))
	if err != nil {
		return fmt.Sprintf("the server reports the connection at %q, not an IP address and port", laddr)
	}
	if ip.Unmap().WithZone("") == d.Addr().Unmap().WithZone("") && laddr[i+1:] == fmt.Sprint(d.Port()) {
		return ""
	}
	return fmt.Sprintf("the connection was dialled to %s and reached the server at %s", d, laddr)
}

// mergeConnIdentities adds the run_ids the admin connections reached to ConnectionRunIDs,
// and the forwarding they show to EndpointForwarded.
func (m *Master) mergeConnIdentities(ci *connIdentities) {
	ci.mu.Lock()
	defer ci.mu.Unlock()
	if m.RunID == "" {
		return // not audited: a problem of its own
	}
	if len(m.ConnectionRunIDs) == 0 {
		m.ConnectionRunIDs = []string{m.RunID}
	}
	for _, id := range ci.ids {
		if !slices.Contains(m.ConnectionRunIDs, id) {
			m.ConnectionRunIDs = append(m.ConnectionRunIDs, id)
		}
	}
	m.EndpointForwarded = strings.Join(ci.forwards, "; ")
	if len(ci.errs) > 0 {
		m.uncheck("whether each of the audit's connections reached the server itself, and the same one: "+strings.Join(ci.errs, "; "), nil)
	}
}
