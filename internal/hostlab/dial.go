//go:build linux

package hostlab

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"runtime"

	"golang.org/x/sys/unix"
)

// ClientCommand returns a command that runs inside client namespace client
// (ip netns exec), so it reaches the hosts as that client.
func (l *Lab) ClientCommand(ctx context.Context, client int, name string, args ...string) *exec.Cmd {
	ns := "hostlab-invalid-client"
	if client >= 0 && client < len(l.clientNS) {
		ns = l.clientNS[client]
	}
	return exec.CommandContext(ctx, "ip", append([]string{"netns", "exec", ns, name}, args...)...)
}

// DialContext returns a dialer whose sockets live in client namespace client, for
// clients in the test process (go-redis: redis.Options{Dialer: lab.DialContext(0)}).
// Addresses must be IP literals (no resolver runs in the namespace). It is safe for
// concurrent use: each dial runs on its own locked OS thread, which switches to the
// namespace, creates and connects the socket (a socket keeps the namespace it was
// created in) and switches back; a thread that cannot switch back is never unlocked,
// so the runtime discards it.
func (l *Lab) DialContext(client int) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		host, _, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, err
		}
		if net.ParseIP(host) == nil {
			return nil, fmt.Errorf("hostlab: dial %s: only IP addresses can be dialled from a client namespace", addr)
		}
		l.mu.Lock()
		closed := l.closed
		var fd int = -1
		if client >= 0 && client < len(l.clientFDs) {
			fd = l.clientFDs[client]
		}
		if fd >= 0 && !closed {
			// Keep the namespace fd valid for the dial: Close waits for dials.
			l.dials.Add(1)
		}
		l.mu.Unlock()
		if closed {
			return nil, fmt.Errorf("hostlab: dial %s: lab closed", addr)
		}
		if fd < 0 {
			return nil, fmt.Errorf("hostlab: no client %d (lab has %d)", client, len(l.clientFDs))
		}
		defer l.dials.Done()
		type result struct {
			conn net.Conn
			err  error
		}
		ch := make(chan result, 1)
		go func() {
			conn, err := dialInNetns(ctx, fd, network, addr)
			ch <- result{conn, err}
		}()
		r := <-ch
		return r.conn, r.err
	}
}

// dialInNetns runs on its own goroutine: if the thread cannot return to its
// namespace, the goroutine ends with the thread still locked and the runtime
// terminates that thread instead of reusing it.
func dialInNetns(ctx context.Context, nsFD int, network, addr string) (net.Conn, error) {
	runtime.LockOSThread()
	orig, err := unix.Open("/proc/thread-self/ns/net", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("hostlab: open own network namespace: %w", err)
	}
	defer unix.Close(orig)
	if err := unix.Setns(nsFD, unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return nil, fmt.Errorf("hostlab: enter client network namespace: %w", err)
	}
	var d net.Dialer
	conn, dialErr := d.DialContext(ctx, network, addr)
	if err := unix.Setns(orig, unix.CLONE_NEWNET); err != nil {
		if conn != nil {
			conn.Close()
		}
		return nil, fmt.Errorf("hostlab: return from client network namespace (thread discarded): %w", err)
	}
	runtime.UnlockOSThread()
	return conn, dialErr
}
