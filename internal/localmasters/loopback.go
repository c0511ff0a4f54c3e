package localmasters

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"sync/atomic"
)

// A master that is killed and restarted keeps its port, so the port must stay free while the
// master is down. On a loopback address other processes use too, their FreePort, their
// masters or their outgoing connections can take it in that window (tests run as several
// processes side by side). Ports on distinct addresses never conflict, so each cluster gets
// a loopback address of its own, claimed for as long as it runs.
//
// The claim is an abstract unix socket named after the address: the kernel refuses a second
// socket of that name in this network namespace and frees it when the holder closes it or
// exits, so a crashed test leaves no claim and no file behind.

// LoopbackClaim is a loopback address (Host) that no other claimer on this machine holds
// until Release.
type LoopbackClaim struct {
	Host string
	sock net.Listener
}

// claimSeq spreads one process's claims over different addresses.
var claimSeq atomic.Uint32

// loopbackAddrs is the number of addresses claims are taken from: 127.1.0.1 to
// 127.254.255.254 (127.0.0.0/16 is left to fixed addresses such as 127.0.0.1 and
// 127.0.0.11; host parts 0 and 255 are skipped).
const loopbackAddrs = 254 * 256 * 254

// loopbackAt maps n (< loopbackAddrs) to its address.
func loopbackAt(n int) string {
	return fmt.Sprintf("127.%d.%d.%d", 1+n/(256*254), n/254%256, 1+n%254)
}

// ErrNoLoopbackClaim is returned when no address could be claimed.
var ErrNoLoopbackClaim = errors.New("localmasters: no loopback address could be claimed")

// ClaimLoopback claims a loopback address for this process. The start of the search comes
// from the pid and a per-process counter, so concurrent processes rarely even try the same
// address; the socket makes sure they never share one. Where only 127.0.0.1 is configured
// (not Linux, which routes all of 127.0.0.0/8 to lo), it returns 127.0.0.1, unclaimed.
func ClaimLoopback() (*LoopbackClaim, error) {
	if runtime.GOOS != "linux" {
		return &LoopbackClaim{Host: "127.0.0.1"}, nil
	}
	start := (os.Getpid()<<9 + int(claimSeq.Add(1))) % loopbackAddrs
	var lastErr error
	for i := 0; i < 4096; i++ {
		host := loopbackAt((start + i) % loopbackAddrs)
		sock, err := net.Listen("unix", "@redlock-kit-loopback/"+host)
		if err != nil {
			lastErr = err
			continue
		}
		return &LoopbackClaim{Host: host, sock: sock}, nil
	}
	return nil, fmt.Errorf("%w (last: %v)", ErrNoLoopbackClaim, lastErr)
}

// Release gives the address up. Safe to call twice and on a nil claim.
func (c *LoopbackClaim) Release() error {
	if c == nil || c.sock == nil {
		return nil
	}
	err := c.sock.Close()
	c.sock = nil
	return err
}
