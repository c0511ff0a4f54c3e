package localmasters

import (
	"net"
	"os"
	"runtime"
	"strings"
	"testing"
)

// Two claims in one process get different addresses; a claimed address cannot be claimed
// again (by this process or another: the name is the kernel's), and can once released.
func TestLoopbackClaimIsExclusiveUntilReleased(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("claims are Linux-only (elsewhere only 127.0.0.1 is configured)")
	}
	a, err := ClaimLoopback()
	if err != nil {
		t.Fatal(err)
	}
	defer a.Release()
	b, err := ClaimLoopback()
	if err != nil {
		t.Fatal(err)
	}
	defer b.Release()
	if a.Host == b.Host || !strings.HasPrefix(a.Host, "127.") || strings.HasPrefix(a.Host, "127.0.") {
		t.Fatalf("claims %s and %s: want two distinct addresses outside 127.0.0.0/16", a.Host, b.Host)
	}
	name := "@redlock-kit-loopback/" + a.Host
	if l, err := net.Listen("unix", name); err == nil {
		l.Close()
		t.Fatalf("%s was claimed a second time while held", a.Host)
	}
	if err := a.Release(); err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("unix", name)
	if err != nil {
		t.Fatalf("%s is still held after Release: %v", a.Host, err)
	}
	l.Close()
	// A port on the claimed address is not a port on 127.0.0.1: binding both at once works.
	l1, err := net.Listen("tcp", net.JoinHostPort(b.Host, "0"))
	if err != nil {
		t.Fatalf("listen on the claimed %s: %v", b.Host, err)
	}
	defer l1.Close()
	_, port, _ := net.SplitHostPort(l1.Addr().String())
	l2, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", port))
	if err != nil {
		t.Skipf("127.0.0.1:%s is taken by something else: %v", port, err)
	}
	l2.Close()
}

// A search that starts at an address someone else holds moves on to the next one.
func TestLoopbackClaimSkipsHeldAddresses(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("claims are Linux-only")
	}
	// The address the next claim starts at, held the way another process would hold it.
	start := (os.Getpid()<<9 + int(claimSeq.Load()+1)) % loopbackAddrs
	other, err := net.Listen("unix", "@redlock-kit-loopback/"+loopbackAt(start))
	if err != nil {
		t.Skipf("%s is held by another process already: %v", loopbackAt(start), err)
	}
	defer other.Close()
	c, err := ClaimLoopback()
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release()
	if c.Host == loopbackAt(start) {
		t.Fatalf("claimed %s, which another holder has", c.Host)
	}
	if want := loopbackAt((start + 1) % loopbackAddrs); c.Host != want {
		t.Errorf("claimed %s, want the next address %s", c.Host, want)
	}
}

func TestLoopbackAtStaysInRange(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want string
	}{{0, "127.1.0.1"}, {253, "127.1.0.254"}, {254, "127.1.1.1"}, {loopbackAddrs - 1, "127.254.255.254"}} {
		if got := loopbackAt(tc.n); got != tc.want {
			t.Errorf("loopbackAt(%d) = %s, want %s", tc.n, got, tc.want)
		}
	}
}
