//go:build linux

package hostlab

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func TestLab(t *testing.T) {
	const n = 5 // a Redlock deployment's size
	var specs []HostSpec
	// Addresses are assigned in order (.11, .12, ...): the user-data needs them, so
	// pass a fixed subnet.
	subnet := fmt.Sprintf("10.213.%d.0/24", 16+os.Getpid()%224)
	prefix := strings.TrimSuffix(subnet, "0/24")
	for i := 0; i < n; i++ {
		addr := fmt.Sprintf("%s%d", prefix, 11+i)
		specs = append(specs, HostSpec{Name: fmt.Sprintf("h%d", i), UserData: userData(addr)})
	}
	start := time.Now()
	lab := Start(t, Options{Hosts: specs, Subnet: subnet, Clients: 1})
	t.Logf("lab with %d hosts up in %v", n, time.Since(start).Round(10*time.Millisecond))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	hosts := lab.Hosts()
	h0, h1, h2 := hosts[0], hosts[1], hosts[2]

	t.Run("CloudInitAndPing", func(t *testing.T) {
		for i, h := range hosts {
			if want := fmt.Sprintf("%s%d", prefix, 11+i); h.Address() != want {
				t.Errorf("%s address %s, want %s", h.Name(), h.Address(), want)
			}
			if err := h.WaitCloudInit(ctx); err != nil {
				t.Fatal(err)
			}
			if out, _ := h.Exec(ctx, "hostname"); strings.TrimSpace(out) != h.Name() {
				t.Errorf("hostname %q, want %s", out, h.Name())
			}
			if out, _ := h.Exec(ctx, "cat", "/var/lib/cloud/data/instance-id"); strings.TrimSpace(out) != h.InstanceID() {
				t.Errorf("%s instance-id %q, want %q", h.Name(), out, h.InstanceID())
			}
			if out, err := h.Systemctl(ctx, "is-active", "redis-server"); err != nil {
				t.Fatalf("%s: redis-server not active: %v %s", h.Name(), err, out)
			}
			if err := ping(ctx, lab, h); err != nil {
				t.Fatalf("PING %s from client 0: %v", h.Name(), err)
			}
		}
		// Debian's hardened unit runs as is: the drop-in is merged, sandboxing on.
		out, _ := h0.Systemctl(ctx, "show", "redis-server", "--property=Environment,ProtectSystem,PrivateUsers,NoNewPrivileges")
		for _, want := range []string{"HOSTLAB_TEST=1", "ProtectSystem=strict", "PrivateUsers=yes", "NoNewPrivileges=yes"} {
			if !strings.Contains(out, want) {
				t.Errorf("redis-server.service lacks %s:\n%s", want, out)
			}
		}
		// Valkey's unit (same hardening) also runs unchanged; the image leaves it off.
		if out, _ := h0.Systemctl(ctx, "is-enabled", "valkey-server"); strings.TrimSpace(out) != "disabled" {
			t.Errorf("valkey-server is-enabled: %q, want disabled", out)
		}
		if out, err := h0.Systemctl(ctx, "start", "valkey-server"); err != nil {
			t.Errorf("start valkey-server: %v %s", err, out)
		} else if out, err := h0.Exec(ctx, "valkey-cli", "-p", "6379", "PING"); err != nil || strings.TrimSpace(out) != "PONG" {
			t.Errorf("valkey PING on loopback: %q %v", out, err)
		}
		if out, err := h0.Systemctl(ctx, "stop", "valkey-server"); err != nil {
			t.Errorf("stop valkey-server: %v %s", err, out)
		}
		// Many concurrent dials from client 0 (each dial switches a thread's namespace).
		var wg sync.WaitGroup
		errs := make(chan error, 4*n)
		for i := 0; i < 4*n; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				errs <- ping(ctx, lab, hosts[i%n])
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Errorf("concurrent PING: %v", err)
			}
		}
		// The caller's process runs in the client namespace.
		cmdOut, err := lab.ClientCommand(ctx, 0, "ip", "-4", "-br", "addr", "show", "eth0").CombinedOutput()
		if err != nil || !strings.Contains(string(cmdOut), lab.ClientAddress(0)+"/24") {
			t.Errorf("client 0 eth0: %v %s", err, cmdOut)
		}
	})

	t.Run("Partitions", func(t *testing.T) {
		if err := lab.Isolate(h0); err != nil {
			t.Fatal(err)
		}
		expectTimeout(t, lab, h0)
		if hostCanReach(ctx, h1, h0) || hostCanReach(ctx, h0, h1) {
			t.Error("isolated h0 still talks to h1")
		}
		if err := ping(ctx, lab, h1); err != nil {
			t.Errorf("h1 unreachable while only h0 is isolated: %v", err)
		}
		if err := lab.Heal(); err != nil {
			t.Fatal(err)
		}
		waitPing(t, lab, h0)

		if err := lab.CutClient(0, h1, h2); err != nil {
			t.Fatal(err)
		}
		expectTimeout(t, lab, h1)
		expectTimeout(t, lab, h2)
		if err := ping(ctx, lab, h0); err != nil {
			t.Errorf("h0 not cut but unreachable: %v", err)
		}
		if !hostCanReach(ctx, h0, h1) {
			t.Error("hosts cannot reach each other while only the client is cut")
		}
		if err := lab.Heal(); err != nil {
			t.Fatal(err)
		}
		waitPing(t, lab, h1)

		if err := lab.OneWay(h0.Address(), h1.Address()); err != nil {
			t.Fatal(err)
		}
		if udpArrives(t, ctx, h0, h1) {
			t.Error("OneWay(h0, h1): datagram h0->h1 arrived")
		}
		if !udpArrives(t, ctx, h1, h0) {
			t.Error("OneWay(h0, h1): datagram h1->h0 lost")
		}
		if err := lab.OneWay(lab.ClientAddress(0), h2.Address()); err != nil {
			t.Fatal(err)
		}
		expectTimeout(t, lab, h2)
		if err := lab.Heal(); err != nil {
			t.Fatal(err)
		}
		if !udpArrives(t, ctx, h0, h1) {
			t.Error("after Heal: datagram h0->h1 lost")
		}
		waitPing(t, lab, h2)
	})

	t.Run("KillRestarts", func(t *testing.T) {
		before, err := h1.MainPID(ctx, "redis-server.service")
		if err != nil {
			t.Fatal(err)
		}
		if comm, _ := os.ReadFile(fmt.Sprintf("/proc/%d/comm", before)); strings.TrimSpace(string(comm)) != "redis-server" {
			t.Fatalf("MainPID %d is %q, not redis-server", before, comm)
		}
		if err := h1.Kill(ctx, "redis-server.service", syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(20 * time.Second)
		for {
			after, err := h1.MainPID(ctx, "redis-server.service")
			if err == nil && after != before {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("redis-server not restarted: MainPID %d -> %d (%v)", before, after, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
		waitPing(t, lab, h1)
	})

	t.Run("Reboot", func(t *testing.T) {
		c := redisClient(lab, h0)
		defer c.Close()
		if err := c.Set(ctx, "k", "v", 0).Err(); err != nil {
			t.Fatal(err)
		}
		if _, err := h0.Exec(ctx, "sh", "-c", "echo kept > /root/marker"); err != nil {
			t.Fatal(err)
		}
		oldPID1 := h0.PID1()
		start := time.Now()
		if err := h0.Reboot(ctx); err != nil {
			t.Fatal(err)
		}
		t.Logf("reboot took %v", time.Since(start).Round(10*time.Millisecond))
		if h0.PID1() == oldPID1 {
			t.Error("same PID 1 after reboot")
		}
		if out, err := h0.Exec(ctx, "cat", "/root/marker"); err != nil || strings.TrimSpace(out) != "kept" {
			t.Errorf("marker after reboot: %q %v", out, err)
		}
		if out, _ := h0.Exec(ctx, "cat", "/root/runs"); strings.Count(out, "run") != 1 {
			t.Errorf("runcmd ran again on reboot: %q", out)
		}
		waitPing(t, lab, h0)
		if got, err := c.Get(ctx, "k").Result(); err != nil || got != "v" {
			t.Errorf("key after reboot: %q %v", got, err)
		}
	})

	t.Run("PowerOffBoot", func(t *testing.T) {
		if _, err := h1.Exec(ctx, "sh", "-c", "echo kept > /root/marker"); err != nil {
			t.Fatal(err)
		}
		id := h1.InstanceID()
		if err := h1.PowerOff(ctx); err != nil {
			t.Fatal(err)
		}
		if h1.Running() {
			t.Fatal("running after PowerOff")
		}
		if _, err := h1.Exec(ctx, "true"); err == nil {
			t.Error("Exec works on a powered-off host")
		}
		dctx, dcancel := context.WithTimeout(ctx, 700*time.Millisecond)
		if conn, err := lab.DialContext(0)(dctx, "tcp", net.JoinHostPort(h1.Address(), "6379")); err == nil {
			conn.Close()
			t.Error("powered-off host accepts connections")
		}
		dcancel()
		if err := h1.Boot(ctx); err != nil {
			t.Fatal(err)
		}
		if out, err := h1.Exec(ctx, "cat", "/root/marker"); err != nil || strings.TrimSpace(out) != "kept" {
			t.Errorf("marker after power cycle: %q %v", out, err)
		}
		if h1.InstanceID() != id {
			t.Errorf("instance-id changed: %s -> %s", id, h1.InstanceID())
		}
		if out, _ := h1.Exec(ctx, "cat", "/root/runs"); strings.Count(out, "run") != 1 {
			t.Errorf("runcmd ran again after power cycle: %q", out)
		}
		waitPing(t, lab, h1)
	})

	t.Run("Replace", func(t *testing.T) {
		if _, err := h2.Exec(ctx, "sh", "-c", "echo old > /root/marker"); err != nil {
			t.Fatal(err)
		}
		id := h2.InstanceID()
		if err := h2.Replace(ctx, userData(h2.Address())); err != nil {
			t.Fatal(err)
		}
		if _, err := h2.Exec(ctx, "test", "-e", "/root/marker"); err == nil {
			t.Error("marker survived Replace")
		}
		if h2.InstanceID() == id {
			t.Error("same instance-id after Replace")
		}
		if err := h2.WaitCloudInit(ctx); err != nil {
			t.Fatal(err)
		}
		if out, _ := h2.Exec(ctx, "cat", "/var/lib/cloud/data/instance-id"); strings.TrimSpace(out) != h2.InstanceID() {
			t.Errorf("instance-id in the host %q, want %q", out, h2.InstanceID())
		}
		if out, _ := h2.Exec(ctx, "cat", "/root/runs"); strings.Count(out, "run") != 1 {
			t.Errorf("runs on the new disk: %q", out)
		}
		waitPing(t, lab, h2)
	})

	t.Run("CloseLeavesNothing", func(t *testing.T) {
		names, cgroups, dir := lab.Names(), lab.CgroupDirs(), lab.Dir()
		var pids []int
		for _, h := range hosts {
			pids = append(pids, h.PID1())
		}
		if err := lab.Close(); err != nil {
			t.Fatal(err)
		}
		assertGone(t, names, cgroups, dir, pids)
	})
}

// TestNewAndCloseConcurrentUse: New without a test, two clients, a host without
// services (connections refused, not dropped), Close twice, nothing left.
func TestNewAndCloseConcurrentUse(t *testing.T) {
	if err := Preflight(); err != nil {
		t.Skip(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	lab, err := New(ctx, Options{Hosts: []HostSpec{{Name: "solo", UserData: "#cloud-config\n{}\n"}}, Clients: 2})
	if err != nil {
		var u *UnavailableError
		if errors.As(err, &u) && os.Getenv("REDLOCK_REQUIRE_HOSTS") != "1" {
			t.Skip(err)
		}
		t.Fatal(err)
	}
	h := lab.Host("solo")
	if h == nil || lab.Host("nope") != nil {
		t.Fatal("Host lookup")
	}
	if out, err := h.Exec(ctx, "cloud-init", "status"); err != nil || !strings.Contains(out, "done") {
		t.Errorf("cloud-init status: %q %v", out, err)
	}
	// The image starts no server by itself: the user-data does.
	for _, unit := range []string{"redis-server", "valkey-server"} {
		if out, _ := h.Systemctl(ctx, "is-active", unit); strings.TrimSpace(out) != "inactive" {
			t.Errorf("%s on a host without user-data: %q, want inactive", unit, out)
		}
	}
	if out, _ := h.Systemctl(ctx, "list-units", "--failed", "--plain", "--no-legend"); strings.TrimSpace(out) != "" {
		t.Errorf("failed units on a bare host:\n%s", out)
	}
	// Client 1 exists, has its own address and reaches the host.
	out, err := lab.ClientCommand(ctx, 1, "ip", "-4", "-br", "addr", "show", "eth0").CombinedOutput()
	if err != nil || !strings.Contains(string(out), lab.ClientAddress(1)+"/24") {
		t.Errorf("client 1: %v %s", err, out)
	}
	// Nothing listens on the host: refused, quickly (not dropped).
	dctx, dcancel := context.WithTimeout(ctx, 2*time.Second)
	_, err = lab.DialContext(1)(dctx, "tcp", net.JoinHostPort(h.Address(), "6379"))
	dcancel()
	if err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("dial a closed port: %v, want connection refused", err)
	}
	names, cgroups, dir := lab.Names(), lab.CgroupDirs(), lab.Dir()
	pids := []int{h.PID1()}
	// Powered off host + a Close racing nothing: still clean.
	if err := h.PowerOff(ctx); err != nil {
		t.Fatal(err)
	}
	if err := lab.Close(); err != nil {
		t.Fatal(err)
	}
	if err := lab.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	assertGone(t, names, cgroups, dir, pids)
	if _, err := lab.DialContext(0)(ctx, "tcp", "10.0.0.1:1"); err == nil {
		t.Error("dial after Close works")
	}
}
