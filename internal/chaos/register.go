package chaos

import (
	"bufio"
	"errors"
	"fmt"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// Register is the fenced resource the workers protect with their locks: one integer per
// key, used as a lock-guarded counter (read it, write it plus one, under the lock). It
// takes the holder's fencing token on every read and write and refuses an operation whose
// fence is smaller than the largest it has seen for the key (a stale holder: its lock
// expired and a later holder has been here). Every operation and its decision is logged
// for the checkers.
//
// It runs in the test process and serves the workers over a unix socket, which the client
// namespaces share with it (they are network namespaces only).
type Register struct {
	mu   sync.Mutex
	keys map[string]*RegisterState
	log  []RegisterOp
	now  func() int64

	ln   net.Listener
	wg   sync.WaitGroup
	conn map[net.Conn]struct{}
}

// RegisterState is one key's register.
type RegisterState struct {
	MaxFence uint64 `json:"max_fence"` // the largest fence an accepted operation carried
	Value    int64  `json:"value"`     // the counter
	Accepted int64  `json:"accepted"`  // accepted writes (increments)
}

// RegisterOp is one operation on the register and its decision.
type RegisterOp struct {
	Seq       int64  `json:"seq"`
	At        int64  `json:"at"` // monotonic ns of the decision
	Key       string `json:"k"`
	Op        string `json:"op"` // read or write
	Holder    string `json:"h"`
	Fence     uint64 `json:"f"`
	Value     int64  `json:"v"` // read: returned; write: written
	Accepted  bool   `json:"ok"`
	MaxBefore uint64 `json:"max_before"` // the register's largest fence when the operation arrived
}

// NewRegister returns an empty register; now is the clock its log uses.
func NewRegister(now func() int64) *Register {
	return &Register{keys: map[string]*RegisterState{}, now: now, conn: map[net.Conn]struct{}{}}
}

func (r *Register) state(key string) *RegisterState {
	s := r.keys[key]
	if s == nil {
		s = &RegisterState{}
		r.keys[key] = s
	}
	return s
}

func (r *Register) record(op RegisterOp) {
	op.Seq = int64(len(r.log) + 1)
	op.At = r.now()
	r.log = append(r.log, op)
}

// Read returns the counter to a holder with this fence, unless a larger fence was seen.
func (r *Register) Read(key, holder string, fence uint64) (value int64, ok bool, max uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.state(key)
	op := RegisterOp{Key: key, Op: OpRead, Holder: holder, Fence: fence, MaxBefore: s.MaxFence}
	if fence == 0 || fence < s.MaxFence {
		r.record(op)
		return 0, false, s.MaxFence
	}
	s.MaxFence = fence
	op.Accepted, op.Value = true, s.Value
	r.record(op)
	return s.Value, true, s.MaxFence
}

// Write sets the counter for a holder with this fence, unless a larger fence was seen.
func (r *Register) Write(key, holder string, fence uint64, value int64) (ok bool, max uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.state(key)
	op := RegisterOp{Key: key, Op: OpWrite, Holder: holder, Fence: fence, Value: value, MaxBefore: s.MaxFence}
	if fence == 0 || fence < s.MaxFence {
		r.record(op)
		return false, s.MaxFence
	}
	s.MaxFence = fence
	s.Value = value
	s.Accepted++
	op.Accepted = true
	r.record(op)
	return true, s.MaxFence
}

// Snapshot returns the registers' states and the operation log.
func (r *Register) Snapshot() (map[string]RegisterState, []RegisterOp) {
	r.mu.Lock()
	defer r.mu.Unlock()
	states := make(map[string]RegisterState, len(r.keys))
	for k, s := range r.keys {
		states[k] = *s
	}
	return states, append([]RegisterOp(nil), r.log...)
}

// Serve listens on a unix socket at path. Protocol, one line each way:
//
//	R <key> <holder> <fence>          -> OK <value> | STALE <max>
//	W <key> <holder> <fence> <value>  -> OK | STALE <max>
func (r *Register) Serve(path string) error {
	ln, err := net.Listen("unix", path)
	if err != nil {
		return err
	}
	if err := os.Chmod(path, 0o600); err != nil {
		ln.Close()
		return err
	}
	r.ln = ln
	r.wg.Add(1)
	go func() {
		defer r.wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			r.mu.Lock()
			r.conn[c] = struct{}{}
			r.mu.Unlock()
			r.wg.Add(1)
			go func() {
				defer r.wg.Done()
				r.serveConn(c)
				r.mu.Lock()
				delete(r.conn, c)
				r.mu.Unlock()
			}()
		}
	}()
	return nil
}

// Close stops serving and waits for the connections' goroutines.
func (r *Register) Close() error {
	if r.ln == nil {
		return nil
	}
	err := r.ln.Close()
	r.mu.Lock()
	for c := range r.conn {
		c.Close()
	}
	r.mu.Unlock()
	r.wg.Wait()
	return err
}

func (r *Register) serveConn(c net.Conn) {
	defer c.Close()
	rd := bufio.NewReader(c)
	w := bufio.NewWriter(c)
	for {
		line, err := rd.ReadString('\n')
		if err != nil {
			return
		}
		reply, err := r.handle(strings.Fields(line))
		if err != nil {
			reply = "ERR " + err.Error()
		}
		if _, err := w.WriteString(reply + "\n"); err != nil {
			return
		}
		if err := w.Flush(); err != nil {
			return
		}
	}
}

func (r *Register) handle(f []string) (string, error) {
	if len(f) < 4 {
		return "", fmt.Errorf("want R <key> <holder> <fence> or W <key> <holder> <fence> <value>, got %q", strings.Join(f, " "))
	}
	fence, err := strconv.ParseUint(f[3], 10, 64)
	if err != nil {
		return "", fmt.Errorf("fence %q: %v", f[3], err)
	}
	switch {
	case f[0] == "R" && len(f) == 4:
		v, ok, max := r.Read(f[1], f[2], fence)
		if !ok {
			return "STALE " + strconv.FormatUint(max, 10), nil
		}
		return "OK " + strconv.FormatInt(v, 10), nil
	case f[0] == "W" && len(f) == 5:
		v, err := strconv.ParseInt(f[4], 10, 64)
		if err != nil {
			return "", fmt.Errorf("value %q: %v", f[4], err)
		}
		ok, max := r.Write(f[1], f[2], fence, v)
		if !ok {
			return "STALE " + strconv.FormatUint(max, 10), nil
		}
		return "OK", nil
	}
	return "", fmt.Errorf("unknown request %q", strings.Join(f, " "))
}

// RegisterClient is a worker's connection to the register.
type RegisterClient struct {
	c  net.Conn
	rd *bufio.Reader
}

// ErrStale is a register's refusal: a larger fence was seen.
var ErrStale = errors.New("stale fence: the register has seen a larger one")

// DialRegister connects to the register's socket.
func DialRegister(path string) (*RegisterClient, error) {
	c, err := net.Dial("unix", path)
	if err != nil {
		return nil, err
	}
	return &RegisterClient{c: c, rd: bufio.NewReader(c)}, nil
}

func (rc *RegisterClient) call(req string) (string, error) {
	if _, err := rc.c.Write([]byte(req + "\n")); err != nil {
		return "", err
	}
	line, err := rc.rd.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimSpace(line)
	switch {
	case strings.HasPrefix(line, "STALE"):
		return "", ErrStale
	case strings.HasPrefix(line, "ERR "):
		return "", errors.New("register: " + line[4:])
	}
	return strings.TrimSpace(strings.TrimPrefix(line, "OK")), nil
}

// Read reads key's counter with this fence (ErrStale when refused).
func (rc *RegisterClient) Read(key, holder string, fence uint64) (int64, error) {
	s, err := rc.call(fmt.Sprintf("R %s %s %d", key, holder, fence))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(s, 10, 64)
}

// Write writes key's counter with this fence (ErrStale when refused).
func (rc *RegisterClient) Write(key, holder string, fence uint64, value int64) error {
	_, err := rc.call(fmt.Sprintf("W %s %s %d %d", key, holder, fence, value))
	return err
}

// Close closes the connection.
func (rc *RegisterClient) Close() error { return rc.c.Close() }

// sortedKeys returns m's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
