//go:build linux

package hostlab

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Tests that need neither root nor containers.

func TestMirrorFromAptSources(t *testing.T) {
	dir := t.TempDir()
	deb822 := filepath.Join(dir, "debian.sources")
	os.WriteFile(deb822, []byte(`Types: deb
URIs: http://mirror.invalid/debian-security
Suites: bookworm-security
Components: main

Types: deb deb-src
# a comment
URIs: http://mirror.invalid/debian
Suites: bookworm bookworm-updates
Components: main contrib
`), 0o644)
	if got := mirrorFromDeb822(deb822); got != "http://mirror.invalid/debian" {
		t.Errorf("deb822: %q", got)
	}
	list := filepath.Join(dir, "sources.list")
	os.WriteFile(list, []byte(`# deb http://commented.invalid/debian bookworm main
deb-src http://src.invalid/debian bookworm main
deb [arch=amd64 signed-by=/k.gpg] http://list.invalid/debian bookworm main non-free
`), 0o644)
	if got := mirrorFromList(list); got != "http://list.invalid/debian" {
		t.Errorf("list: %q", got)
	}
	os.WriteFile(list, []byte("deb http://x.invalid/debian trixie main\n"), 0o644)
	if got := mirrorFromList(list); got != "" {
		t.Errorf("other suite: %q", got)
	}
}

func TestPartitionRuleset(t *testing.T) {
	var p partitions
	p.reset()
	empty := p.ruleset()
	if !strings.Contains(empty, "delete table bridge hostlab") || strings.Contains(empty, "chain") {
		t.Errorf("healed ruleset:\n%s", empty)
	}
	p.isolated["10.0.0.11"] = true
	p.drops[[2]string{"10.0.0.201", "10.0.0.12"}] = true
	got := p.ruleset()
	for _, want := range []string{
		"ip saddr 10.0.0.11 drop", "ip daddr 10.0.0.11 drop",
		"ip saddr 10.0.0.201 ip daddr 10.0.0.12 drop",
		"type filter hook forward priority 0; policy accept;",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("ruleset lacks %q:\n%s", want, got)
		}
	}
	if strings.Contains(got, "reject") {
		t.Error("partitions must drop, not reject")
	}
}

func TestStaleNames(t *testing.T) {
	self := os.Getpid()
	for name, want := range map[string]bool{
		"hostlab-999999999-1-switch": true, // no such pid
		"hostlab-999999999-3":        true,
		"hostlab-1-1-h0":             false, // pid 1 is alive
		"hostlab-x-1":                false,
		"other-999999999-1":          false,
		"hostlab-999999999":          false,
	} {
		if _, dead := ownerDead(name); dead != want {
			t.Errorf("ownerDead(%q) = %v, want %v", name, dead, want)
		}
	}
	if _, dead := ownerDead("hostlab-" + strconv.Itoa(self) + "-1"); dead {
		t.Error("own names are not stale")
	}
}

func TestImageHashCoversInputs(t *testing.T) {
	h := imageHash()
	saved := imagePackages
	imagePackages = append(append([]string(nil), saved...), "extra")
	defer func() { imagePackages = saved }()
	if imageHash() == h {
		t.Error("package list not in the image hash")
	}
}

// ProvisionAll needs one user-data per host; it names the mismatch and boots nothing.
func TestProvisionAllWantsOneUserDataPerHost(t *testing.T) {
	l := &Lab{hosts: []*Host{{name: "a"}, {name: "b"}}}
	err := l.ProvisionAll(context.Background(), []string{"#cloud-config\n"})
	if err == nil || !strings.Contains(err.Error(), "1 user-data for 2 hosts") {
		t.Fatalf("ProvisionAll with 1 user-data for 2 hosts: %v", err)
	}
	for _, h := range l.hosts {
		if h.Running() {
			t.Fatalf("host %s was started", h.name)
		}
	}
}
