package validation

import (
	"context"
	"io"
	"net"
	"sync"
)

// roundRobin is a TCP balancer on loopback that hands each new connection to the next of
// its backends: what a load balancer or NAT in front of several servers does to clients
// that think they talk to one master. The catalogue's balancer case puts it in front of an
// endpoint and a spare server.
type roundRobin struct {
	ln       net.Listener
	backends []string
	dial     func(ctx context.Context, network, addr string) (net.Conn, error)

	mu     sync.Mutex
	closed bool
	next   int
	conns  map[net.Conn]bool
	wg     sync.WaitGroup
}

func newRoundRobin(backends []string, dial func(ctx context.Context, network, addr string) (net.Conn, error)) (*roundRobin, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	if dial == nil {
		var d net.Dialer
		dial = d.DialContext
	}
	rr := &roundRobin{ln: ln, backends: backends, dial: dial, conns: map[net.Conn]bool{}}
	rr.wg.Add(1)
	go rr.serve()
	return rr, nil
}

// Addr is the balancer's host:port.
func (rr *roundRobin) Addr() string { return rr.ln.Addr().String() }

func (rr *roundRobin) serve() {
	defer rr.wg.Done()
	for {
		client, err := rr.ln.Accept()
		if err != nil {
			return
		}
		rr.mu.Lock()
		backend := rr.backends[rr.next%len(rr.backends)]
		rr.next++
		rr.conns[client] = true
		rr.mu.Unlock()
		rr.wg.Add(1)
		go func() {
			defer rr.wg.Done()
			rr.pipe(client, backend)
		}()
	}
}

func (rr *roundRobin) pipe(client net.Conn, backend string) {
	server, err := rr.dial(context.Background(), "tcp", backend)
	if err != nil {
		rr.drop(client)
		return
	}
	rr.mu.Lock()
	if rr.closed {
		rr.mu.Unlock()
		_ = server.Close()
		rr.drop(client)
		return
	}
	rr.conns[server] = true
	rr.mu.Unlock()
	done := make(chan struct{}, 2)
	go func() { _, _ = io.Copy(server, client); done <- struct{}{} }()
	go func() { _, _ = io.Copy(client, server); done <- struct{}{} }()
	<-done
	rr.drop(client)
	rr.drop(server)
	<-done
}

func (rr *roundRobin) drop(c net.Conn) {
	_ = c.Close()
	rr.mu.Lock()
	delete(rr.conns, c)
	rr.mu.Unlock()
}

// Close stops accepting, closes every connection and waits for the copies to end.
func (rr *roundRobin) Close() error {
	err := rr.ln.Close()
	rr.mu.Lock()
	rr.closed = true
	for c := range rr.conns {
		_ = c.Close()
	}
	rr.mu.Unlock()
	rr.wg.Wait()
	return err
}
