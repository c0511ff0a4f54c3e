package redlock_test

import (
	"bufio"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// monitor records what one master executes (MONITOR, as the admin): top-level commands
// and, tagged "lua", the commands a script ran.
type monitor struct {
	mu    sync.Mutex
	lines []string
	conn  net.Conn
	done  chan struct{}
}

func startMonitor(t *testing.T, m *redistest.Master) *monitor {
	t.Helper()
	conn, err := net.DialTimeout("tcp", m.Addr, 2*time.Second)
	if err != nil {
		t.Fatalf("monitor dial: %v", err)
	}
	mon := &monitor{conn: conn, done: make(chan struct{})}
	t.Cleanup(mon.stop)
	fmt.Fprintf(conn, "AUTH %s\r\nMONITOR\r\n", redistest.AdminPassword)
	r := bufio.NewReader(conn)
	for i := 0; i < 2; i++ {
		line, err := r.ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "+OK") {
			t.Fatalf("monitor handshake: %q %v", line, err)
		}
	}
	go func() {
		defer close(mon.done)
		for {
			line, err := r.ReadString('\n')
			if err != nil {
				return
			}
			mon.mu.Lock()
			mon.lines = append(mon.lines, strings.TrimSpace(line))
			mon.mu.Unlock()
		}
	}()
	return mon
}

func (m *monitor) stop() {
	_ = m.conn.Close()
	<-m.done
}

// commands returns the recorded commands that mention key, as `lua? "cmd" "arg"...`
// strings: scripted commands start with "lua ".
func (m *monitor) commands(key string) []string {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []string
	quoted := `"` + key + `"`
	for _, l := range m.lines {
		if !strings.Contains(l, quoted) {
			continue
		}
		// +1700000000.123456 [0 127.0.0.1:5555] "set" "k" ...   or   [0 lua] "get" "k"
		i := strings.Index(l, "] ")
		if i < 0 {
			continue
		}
		origin, cmd := l[:i], l[i+2:]
		if strings.HasSuffix(origin, " lua") {
			cmd = "lua " + cmd
		}
		out = append(out, strings.ToLower(cmd))
	}
	return out
}

// waitFor polls until a recorded command for key starts with prefix.
func (m *monitor) waitFor(t *testing.T, key, prefix string) {
	t.Helper()
	waitUntil(t, "MONITOR shows "+prefix, func() bool {
		for _, c := range m.commands(key) {
			if strings.HasPrefix(c, prefix) {
				return true
			}
		}
		return false
	})
}
