package audit_test

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/audit"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// portForward listens on loopback address on (host:port) and pipes every connection to
// target: a port forward (or NAT, or a proxy) in front of one master.
func portForward(t *testing.T, on, target string) (string, error) {
	t.Helper()
	ln, err := net.Listen("tcp", on)
	if err != nil {
		return "", err
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	t.Cleanup(func() {
		_ = ln.Close()
		mu.Lock()
		for _, c := range conns {
			_ = c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			server, err := net.Dial("tcp", target)
			if err != nil {
				_ = client.Close()
				continue
			}
			mu.Lock()
			conns = append(conns, client, server)
			mu.Unlock()
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(server, client); _ = server.Close() }()
			go func() { defer wg.Done(); _, _ = io.Copy(client, server); _ = client.Close() }()
		}
	}()
	return ln.Addr().String(), nil
}

// TestEndpointIsTheServersOwnAddress: an endpoint that is a port forward to a master cannot
// be vouched for: what answers there is chosen in between, at any moment. The audit says so
// (INCONCLUSIVE, naming the endpoint), whatever the server binds: its own address, or a
// wildcard of either family (with bind * an IPv6 forwarder passed a check on bind). The
// same masters at their own addresses are the control.
func TestEndpointIsTheServersOwnAddress(t *testing.T) {
	c := startKit(t, redistest.Options{Masters: 3})
	ctx := context.Background()
	const why = "is not the server's own address"
	problems := func(rep *audit.Report) string { return strings.Join(rep.Problems, "\n") }
	rep := run(t, target(c))
	if !rep.Safe || len(rep.Unchecked) > 0 || rep.Masters[1].EndpointForwarded != "" {
		t.Fatalf("the cluster at its own addresses: safe %v, problems %q, unchecked %q", rep.Safe, rep.Problems, rep.Unchecked)
	}
	for _, bind := range []string{"", "* -::*"} {
		if bind != "" {
			if err := c.Masters[1].Admin().ConfigSet(ctx, "bind", bind).Err(); err != nil {
				t.Fatalf("CONFIG SET bind %q: %v", bind, err)
			}
		}
		for _, on := range []string{"127.0.0.1:0", "[::1]:0"} {
			tgt := target(c)
			fwd, err := portForward(t, on, c.Masters[1].Addr)
			if err != nil {
				t.Logf("no forwarder on %s: %v", on, err)
				continue
			}
			tgt.Endpoints[1] = fwd
			rep = run(t, tgt)
			if got := problems(rep); rep.Safe || rep.Masters[1].EndpointForwarded == "" || !strings.Contains(got, why) || !strings.Contains(got, fwd) {
				t.Errorf("bind %q, a port forward on %s to master 1: safe %v, problems %q; want %q naming %s", bind, on, rep.Safe, got, why, fwd)
			}
			for _, i := range []int{0, 2} {
				if f := rep.Masters[i].EndpointForwarded; f != "" {
					t.Errorf("master %d at its own address: %q", i, f)
				}
			}
		}
	}
}

// TestEveryAdminConnectionReachesOneServer: the audit reads the run_id on every connection
// its admin client opens, so a connection opened again mid-audit that reaches another server
// (an endpoint re-pointed in between) makes the endpoint one of several servers: UNSAFE.
// Two real servers stand for the first connection and the one opened again.
func TestEveryAdminConnectionReachesOneServer(t *testing.T) {
	c := redistest.Start(t, redistest.Options{Masters: 2})
	ctx := context.Background()
	ci := &audit.ConnIdentities{}
	var ids []string
	for _, m := range c.Masters {
		opt := &redis.Options{Addr: m.Addr, Username: "default", Password: redistest.AdminPassword, OnConnect: ci.OnConnect}
		cl := redis.NewClient(opt)
		info, err := cl.InfoMap(ctx, "server").Result()
		_ = cl.Close()
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, info["Server"]["run_id"])
	}
	same := &audit.Master{RunID: ids[0], ConnectionRunIDs: []string{ids[0]}}
	one := &audit.ConnIdentities{}
	cl := redis.NewClient(&redis.Options{Addr: c.Masters[0].Addr, Username: "default", Password: redistest.AdminPassword, OnConnect: one.OnConnect})
	if err := cl.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	_ = cl.Close()
	audit.MergeConnIdentities(same, one)
	if len(same.ConnectionRunIDs) != 1 || len(same.Unchecked) > 0 {
		t.Fatalf("connections to one server: %q, unchecked %q (the control)", same.ConnectionRunIDs, same.Unchecked)
	}
	two := &audit.Master{RunID: ids[0], ConnectionRunIDs: []string{ids[0]}}
	audit.MergeConnIdentities(two, ci)
	if len(two.ConnectionRunIDs) != 2 || two.ConnectionRunIDs[1] != ids[1] {
		t.Fatalf("a connection that reached another server: ConnectionRunIDs %q, want %q", two.ConnectionRunIDs, ids)
	}
}
