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
)

// An endpoint names one server only if nothing between the client and the server decides
// where a connection goes. The identity checks (several connections, the run_id the
// deployment record names, validate's identity marker) see a forwarder that spreads
// connections while they look; a port forward, NAT or proxy that reaches one server now
// can reach another one later, unseen. So the audit also asks the server where it listens
// (port or tls-port, bind) and requires the endpoint to be one of those addresses, and it
// reads the run_id on every connection it opens with the admin, not only on the first.

// endpointMismatch says how the endpoint differs from where the server listens, or ""
// when the endpoint is one of its addresses or that cannot be told (a setting not read, a
// name that does not resolve here). listenPort is the port or tls-port the client uses;
// bind is the server's bind setting (a leading "-" marks an optional address).
func endpointMismatch(ctx context.Context, ep, listenPort, bind string, lookup func(context.Context, string) ([]string, error)) string {
	host, port, err := net.SplitHostPort(ep)
	if err != nil {
		return ""
	}
	if listenPort != "" && listenPort != port {
		return fmt.Sprintf("the server listens on port %s, not the endpoint's %s", listenPort, port)
	}
	var bound []netip.Addr
	for _, b := range strings.Fields(bind) {
		b = strings.TrimPrefix(b, "-")
		switch b {
		case "*", "0.0.0.0", "::", "::*":
			return "" // every address of its machine
		}
		if a, err := netip.ParseAddr(b); err == nil {
			bound = append(bound, a.Unmap())
		}
	}
	if len(bound) == 0 {
		return ""
	}
	addrs := []string{host}
	if _, err := netip.ParseAddr(host); err != nil {
		if addrs, err = lookup(ctx, host); err != nil || len(addrs) == 0 {
			return ""
		}
	}
	for _, s := range addrs {
		if a, err := netip.ParseAddr(s); err == nil && slices.Contains(bound, a.Unmap()) {
			return ""
		}
	}
	return fmt.Sprintf("the server binds %s, and the endpoint's host %s is none of those addresses", bind, host)
}

// checkEndpoint reports an endpoint that is not one of the server's own addresses as a
// check that could not be made: what answers there is chosen by something in between.
func (m *Master) checkEndpoint(ctx context.Context, t Target) {
	listen := m.PlainPort
	if t.TLS {
		listen = m.TLSPort
	}
	lookup := func(ctx context.Context, host string) ([]string, error) {
		ctx, cancel := context.WithTimeout(ctx, t.NodeTimeout)
		defer cancel()
		return net.DefaultResolver.LookupHost(ctx, host)
	}
	if why := endpointMismatch(ctx, m.Endpoint, listen, m.Bind, lookup); why != "" {
		m.uncheck(fmt.Sprintf("whether endpoint %s is the master's own address: %s. A port forward, NAT or proxy in between chooses where each connection goes, and can send one to another server at any moment, unseen by the checks of a moment (fix: list the address and port the server listens on)", m.Endpoint, why), nil)
	}
}

// connIdentities records the run_id each new admin connection reaches (redis.Options's
// OnConnect): a connection opened again mid-audit (after a timeout) must reach the server
// the first one did.
type connIdentities struct {
	mu   sync.Mutex
	ids  []string
	errs []string
}

func (ci *connIdentities) onConnect(ctx context.Context, cn *redis.Conn) error {
	info, err := cn.Info(ctx, "server").Result()
	id := parseInfo(info)["run_id"]
	ci.mu.Lock()
	defer ci.mu.Unlock()
	switch {
	case err != nil:
		ci.errs = append(ci.errs, err.Error())
	case id == "":
		ci.errs = append(ci.errs, "INFO server has no run_id")
	case !slices.Contains(ci.ids, id):
		ci.ids = append(ci.ids, id)
	}
	return nil // the connection is used; its identity is judged after the audit
}

// merge adds the run_ids the audit's own connections reached to ConnectionRunIDs.
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
	if len(ci.errs) > 0 {
		m.uncheck("whether each of the audit's connections reached the same server (INFO server on connect): "+strings.Join(ci.errs, "; "), nil)
	}
}
