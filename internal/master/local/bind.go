package local

import (
	"fmt"
	"net"
	"os"
	"strings"
)

// BindAddress says whether redis-server can listen on ip on this machine: a loopback or
// wildcard address, or an address of one of its interfaces. Any other address is refused,
// since the master could not start there, unless the kernel was told to allow listening on
// addresses the machine does not have (the sysctl net.ipv4.ip_nonlocal_bind, or
// net.ipv6.ip_nonlocal_bind, set to 1): an operator sets that on purpose for an address that
// arrives later (a failover address). nonlocal is then true, and the caller warns.
func BindAddress(ip string) (nonlocal bool, err error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false, fmt.Errorf("cannot list this machine's addresses: %v", err)
	}
	var own []net.IP
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok {
			own = append(own, n.IP)
		}
	}
	return bindAddress(net.ParseIP(ip), own, nonlocalBindAllowed(net.ParseIP(ip)))
}

func bindAddress(ip net.IP, own []net.IP, nonlocalAllowed bool) (nonlocal bool, err error) {
	if ip == nil {
		return false, fmt.Errorf("not an IP address")
	}
	if ip.IsLoopback() || ip.IsUnspecified() {
		return false, nil
	}
	var names []string
	for _, o := range own {
		if o.Equal(ip) {
			return false, nil
		}
		if !o.IsLoopback() && !o.IsLinkLocalUnicast() {
			names = append(names, o.String())
		}
	}
	if nonlocalAllowed {
		return true, nil
	}
	have := "none but loopback"
	if len(names) > 0 {
		have = strings.Join(names, ", ")
	}
	return false, fmt.Errorf("%s is not an address of this machine (its addresses: %s), so the master could not listen "+
		"on it: use one of its addresses, or, if the address comes to this machine later on purpose, allow that with the "+
		"sysctl %s = 1", ip, have, nonlocalSysctl(ip))
}

func nonlocalSysctl(ip net.IP) string {
	if ip.To4() != nil {
		return "net.ipv4.ip_nonlocal_bind"
	}
	return "net.ipv6.ip_nonlocal_bind"
}

// nonlocalBindAllowed reads the sysctl that lets a process listen on an address the machine
// does not have.
func nonlocalBindAllowed(ip net.IP) bool {
	if ip == nil {
		return false
	}
	file := "/proc/sys/" + strings.ReplaceAll(nonlocalSysctl(ip), ".", "/")
	v, err := os.ReadFile(file)
	return err == nil && strings.TrimSpace(string(v)) == "1"
}
