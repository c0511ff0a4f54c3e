//go:build linux

package hostlab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

// The lab network: one "switch" namespace holding a bridge, and one namespace per
// host and per client, each with an eth0 whose veth peer is a port of the bridge.
// Nothing of it exists in the root network namespace. Faults are nft rules in a
// bridge-family table in the switch namespace: the containers cannot see or change
// them, and dropped packets make connections time out, as a real partition does.

const (
	bridgeName = "br0"
	nftTable   = "hostlab"
)

// ipCmd runs ip(8) (or any command) and returns an error with its output.
func run(ctx context.Context, stdin string, name string, args ...string) error {
	cmd := exec.CommandContext(ctx, name, args...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	cmd.WaitDelay = 2 * time.Second
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("%s %s: %v: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// addNetns creates a namespace and records it for Close before anything else can fail.
func (l *Lab) addNetns(ctx context.Context, name string) error {
	if _, err := os.Stat("/run/netns/" + name); err == nil {
		return fmt.Errorf("network namespace %s already exists", name)
	}
	if err := run(ctx, "", "ip", "netns", "add", name); err != nil {
		return err
	}
	l.mu.Lock()
	l.netns = append(l.netns, name)
	l.mu.Unlock()
	return run(ctx, "", "ip", "-n", name, "link", "set", "lo", "up")
}

func (l *Lab) createSwitch(ctx context.Context) error {
	if err := l.addNetns(ctx, l.switchNS); err != nil {
		return err
	}
	if err := run(ctx, "", "ip", "-n", l.switchNS, "link", "add", bridgeName, "type", "bridge"); err != nil {
		return err
	}
	return run(ctx, "", "ip", "-n", l.switchNS, "link", "set", bridgeName, "up")
}

// attach creates namespace ns with eth0 = addr/24, plugged into bridge port port.
func (l *Lab) attach(ctx context.Context, ns, port, addr string) error {
	if err := l.addNetns(ctx, ns); err != nil {
		return err
	}
	steps := [][]string{
		{"-n", l.switchNS, "link", "add", port, "type", "veth", "peer", "name", "eth0", "netns", ns},
		{"-n", l.switchNS, "link", "set", port, "master", bridgeName, "up"},
		{"-n", ns, "addr", "add", addr + "/24", "dev", "eth0"},
		{"-n", ns, "link", "set", "eth0", "up"},
	}
	for _, s := range steps {
		if err := run(ctx, "", "ip", s...); err != nil {
			return err
		}
	}
	return nil
}

// partitions is the set of faults in force.
type partitions struct {
	isolated map[string]bool    // address -> drop everything from and to it
	drops    map[[2]string]bool // {src, dst} -> drop src->dst
}

func (p *partitions) reset() {
	p.isolated = map[string]bool{}
	p.drops = map[[2]string]bool{}
}

func (p *partitions) ruleset() string {
	var rules []string
	for a := range p.isolated {
		rules = append(rules, "ip saddr "+a+" drop", "ip daddr "+a+" drop")
	}
	for k := range p.drops {
		rules = append(rules, "ip saddr "+k[0]+" ip daddr "+k[1]+" drop")
	}
	sort.Strings(rules)
	var b strings.Builder
	// Create-then-delete makes the load idempotent; nft -f applies the file atomically.
	fmt.Fprintf(&b, "table bridge %s\ndelete table bridge %s\n", nftTable, nftTable)
	if len(rules) == 0 {
		return b.String()
	}
	fmt.Fprintf(&b, "table bridge %s {\n\tchain forward {\n\t\ttype filter hook forward priority 0; policy accept;\n", nftTable)
	for _, r := range rules {
		b.WriteString("\t\t" + r + "\n")
	}
	b.WriteString("\t}\n}\n")
	return b.String()
}

// applyPartitions loads the current rule set into the switch namespace. l.netMu held.
func (l *Lab) applyPartitions() error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return run(ctx, l.parts.ruleset(), "ip", "netns", "exec", l.switchNS, "nft", "-f", "-")
}

// Isolate cuts h off: it reaches nobody and nobody reaches it (packets dropped, so
// connections time out). Loopback inside h still works. Heal undoes it.
func (l *Lab) Isolate(h *Host) error {
	if h == nil {
		return errors.New("hostlab: Isolate: nil host")
	}
	l.netMu.Lock()
	defer l.netMu.Unlock()
	l.parts.isolated[h.addr] = true
	return l.applyPartitions()
}

// CutClient drops every packet between client namespace client and each host.
func (l *Lab) CutClient(client int, hosts ...*Host) error {
	ca, err := l.clientAddr(client)
	if err != nil {
		return err
	}
	l.netMu.Lock()
	defer l.netMu.Unlock()
	for _, h := range hosts {
		l.parts.drops[[2]string{ca, h.addr}] = true
		l.parts.drops[[2]string{h.addr, ca}] = true
	}
	return l.applyPartitions()
}

// OneWay drops packets from address from to address to; packets to->from still pass
// (so a TCP connection either way cannot complete, but datagrams to->from arrive).
func (l *Lab) OneWay(from, to string) error {
	for _, a := range []string{from, to} {
		if !l.inSubnet(a) {
			return fmt.Errorf("hostlab: OneWay: %q is not an address in %s", a, l.subnet)
		}
	}
	l.netMu.Lock()
	defer l.netMu.Unlock()
	l.parts.drops[[2]string{from, to}] = true
	return l.applyPartitions()
}

// Heal removes every partition rule.
func (l *Lab) Heal() error {
	l.netMu.Lock()
	defer l.netMu.Unlock()
	l.parts.reset()
	return l.applyPartitions()
}

func (l *Lab) inSubnet(addr string) bool {
	ip := net.ParseIP(addr)
	return ip != nil && ip.To4() != nil && l.subnetNet.Contains(ip)
}
