package local

import (
	"net"
	"strings"
	"testing"
)

// TestBindAddress: the master may listen only where this machine can: loopback, the
// wildcard, its own addresses, or an address not here yet when the kernel was told to allow
// that on purpose.
func TestBindAddress(t *testing.T) {
	own := []net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.1.2.3"), net.ParseIP("fe80::1"), net.ParseIP("2001:db8::7")}
	for _, tc := range []struct {
		name            string
		ip              string
		nonlocalAllowed bool
		wantNonlocal    bool
		wantErr         string
	}{
		{name: "loopback", ip: "127.0.0.11"},
		{name: "wildcard", ip: "0.0.0.0"},
		{name: "ipv6 wildcard", ip: "::"},
		{name: "own address", ip: "10.1.2.3"},
		{name: "own ipv6 address", ip: "2001:db8::7"},
		{name: "not here", ip: "192.0.2.10", wantErr: "192.0.2.10 is not an address of this machine (its addresses: 10.1.2.3, 2001:db8::7)"},
		{name: "not here: names the sysctl", ip: "192.0.2.10", wantErr: "net.ipv4.ip_nonlocal_bind = 1"},
		{name: "ipv6 not here: names the sysctl", ip: "2001:db8::8", wantErr: "net.ipv6.ip_nonlocal_bind = 1"},
		{name: "not here, allowed by the kernel", ip: "192.0.2.10", nonlocalAllowed: true, wantNonlocal: true},
		{name: "not an IP", ip: "localhost", wantErr: "not an IP address"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nonlocal, err := bindAddress(net.ParseIP(tc.ip), own, tc.nonlocalAllowed)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("error %v, want one containing %q", err, tc.wantErr)
			}
			if nonlocal != tc.wantNonlocal {
				t.Errorf("nonlocal = %v, want %v", nonlocal, tc.wantNonlocal)
			}
		})
	}
}

// TestBindAddressOnThisMachine: the machine's own non-loopback addresses pass, an address
// from the documentation range (192.0.2.0/24, never assigned) does not unless the kernel
// allows non-local binds.
func TestBindAddressOnThisMachine(t *testing.T) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			if _, err := BindAddress(n.IP.String()); err != nil {
				t.Errorf("BindAddress(%s), an address of this machine: %v", n.IP, err)
			}
		}
	}
	nonlocal, err := BindAddress("192.0.2.10")
	if nonlocalBindAllowed(net.ParseIP("192.0.2.10")) {
		if err != nil || !nonlocal {
			t.Errorf("with ip_nonlocal_bind = 1: nonlocal %v, err %v; want true, nil", nonlocal, err)
		}
	} else if err == nil {
		t.Error("BindAddress(192.0.2.10) passed on a machine that does not have it")
	}
}
