package redlock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/redistest"
	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// crashProxy forwards one master's connections; once armed with a token, it drops the
// reply to the first request that names it, crashes the master and restarts it at once
// (crash), then cuts the client's connection: the master ran the request and the client
// never heard of it. It counts the requests naming the token (a go-redis replay is a
// second one).
type crashProxy struct {
	ln     net.Listener
	target string
	crash  func() error

	mu      sync.Mutex
	token   []byte // armed: the token to look for
	fired   bool
	dropped []byte // the reply dropped
	seen    int    // requests naming token
	crashed chan error
	conns   []net.Conn
}

func startCrashProxy(t *testing.T, target string, crash func() error) *crashProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &crashProxy{ln: ln, target: target, crash: crash, crashed: make(chan error, 1)}
	t.Cleanup(func() {
		_ = ln.Close()
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, c := range p.conns {
			_ = c.Close()
		}
	})
	go p.accept()
	return p
}

func (p *crashProxy) arm(token string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.token = []byte(token)
}

func (p *crashProxy) accept() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		u, err := net.Dial("tcp", p.target)
		if err != nil {
			_ = c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, u)
		p.mu.Unlock()
		var mu sync.Mutex
		dropNext := false
		go func() { // client -> master
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(buf)
				if n > 0 {
					p.mu.Lock()
					if p.token != nil && bytes.Contains(buf[:n], p.token) {
						p.seen++
						if !p.fired {
							p.fired = true
							mu.Lock()
							dropNext = true
							mu.Unlock()
						}
					}
					p.mu.Unlock()
					if _, err := u.Write(buf[:n]); err != nil {
						_ = c.Close()
						return
					}
				}
				if err != nil {
					_ = u.Close()
					return
				}
			}
		}()
		go func() { // master -> client
			buf := make([]byte, 64<<10)
			for {
				n, err := u.Read(buf)
				if n > 0 {
					mu.Lock()
					drop := dropNext
					dropNext = false
					mu.Unlock()
					if drop {
						p.mu.Lock()
						p.dropped = append([]byte(nil), buf[:n]...)
						p.mu.Unlock()
						p.crashed <- p.crash()
						_ = u.Close()
						_ = c.Close()
						return
					}
					if _, err := c.Write(buf[:n]); err != nil {
						_ = u.Close()
						return
					}
				}
				if err != nil {
					_ = c.Close()
					return
				}
			}
		}()
	}
}

// TestReplayedReleaseThroughGoRedis is TestReplayedReleaseAfterCrashKeepsHandOff through
// the library. X, a waiter handed the lock by a logged hand-off, releases; on every
// master the release hands the lock to Y without a log write, the reply is lost, and the
// master crashes and restarts at once. A release sent again deletes X's key restored from
// the AOF, and Z acquires the lock Y was handed: two holders. Two lines of defence stop it:
// New refuses clients built to retry, and every command the Client sends tells go-redis
// not to send it again (Cmder.NoRetry), whatever the client's options are later.
//
//   - MaxRetries -1 (required): nothing is resent, and Z is refused.
//   - MaxRetries 0 (the go-redis default, 3 retries): New refuses the clients
//     (RetryingClientError, naming the master, the field and the fix).
//   - MaxRetries raised to 3 after New (rdb.Options() is the live struct go-redis reads
//     for every command): the commands still go out once, and Z is refused.
//   - MaxRetries 0 past New's refusal (redlock.NewAllowingRetries): the commands alone
//     keep go-redis from resending; Z is refused.
//   - The negative controls, with the commands made retryable again
//     (redlock.SetRetryableCommands): MaxRetries raised after New, or clients with
//     go-redis's default past the refusal: go-redis resends the release, two holders. They
//     show that each line is what closes the hole.
func TestReplayedReleaseThroughGoRedis(t *testing.T) {
	t.Run("MaxRetries=-1", func(t *testing.T) {
		if replayedReleaseThroughGoRedis(t, replayCase{clientRetries: -1, newX: redlock.New}) {
			t.Error("two holders with MaxRetries -1")
		}
	})
	t.Run("MaxRetries=0 is refused by New", func(t *testing.T) {
		var masters []redis.UniversalClient
		for i, retries := range []int{-1, -1, 0} { // never dialled
			rc := redis.NewClient(&redis.Options{Addr: "127.0.0.1:" + strconv.Itoa(i+1), MaxRetries: retries})
			defer rc.Close()
			masters = append(masters, rc)
		}
		_, err := redlock.New(masters, redlock.Options{})
		var re *redlock.RetryingClientError
		if !errors.As(err, &re) || !errors.Is(err, redlock.ErrInvalid) || re.Master != 2 || re.Retries != 3 {
			t.Fatalf("New with a go-redis client of default options: %v, want a RetryingClientError (ErrInvalid) of master 2, 3 retries", err)
		}
	})
	t.Run("MaxRetries raised to 3 after New: sent once", func(t *testing.T) {
		if replayedReleaseThroughGoRedis(t, replayCase{clientRetries: -1, newX: redlock.New, raiseTo: 3}) {
			t.Error("two holders: a client's MaxRetries raised after New made go-redis resend the release")
		}
	})
	t.Run("MaxRetries=0 past the refusal: sent once", func(t *testing.T) {
		if replayedReleaseThroughGoRedis(t, replayCase{clientRetries: 0, newX: redlock.NewAllowingRetries}) {
			t.Error("two holders: go-redis resent a command that says it must not be")
		}
	})
	t.Run("MaxRetries raised to 3 after New, commands retryable: two holders (negative control)", func(t *testing.T) {
		if !replayedReleaseThroughGoRedis(t, replayCase{clientRetries: -1, newX: redlock.New, raiseTo: 3, retryable: true}) {
			t.Error("Z was refused although go-redis resent the release: the control no longer reproduces the hole, so it proves nothing about the commands' NoRetry")
		}
	})
	t.Run("MaxRetries=0 past the refusal, commands retryable: two holders (negative control)", func(t *testing.T) {
		if !replayedReleaseThroughGoRedis(t, replayCase{clientRetries: 0, newX: redlock.NewAllowingRetries, retryable: true}) {
			t.Error("Z was refused although go-redis resent the release: the control no longer reproduces the hole, so it proves nothing about New's refusal")
		}
	})
}

// replayCase is how X's Client is built: its go-redis clients' MaxRetries (0: the
// default, 3 retries), the constructor, the MaxRetries set on the live options after it
// (raiseTo > 0), and whether its commands are made retryable again (retryable).
type replayCase struct {
	clientRetries int
	newX          func([]redis.UniversalClient, redlock.Options) (*redlock.Client, error)
	raiseTo       int
	retryable     bool
	// hook is added to X's go-redis clients (an application's hook: hooks_noretry_test.go).
	hook *resendingHook
}

// resends reports whether go-redis may send X's release again: its options allow retries
// and the commands do not say no, or a hook sends it again without asking them.
func (rc replayCase) resends() bool {
	return rc.retryable && (rc.clientRetries >= 0 || rc.raiseTo > 0) || rc.hook != nil && !rc.hook.honoursNoRetry
}

// replayedReleaseThroughGoRedis reports whether Z acquired before the deadline of Y's
// lock (two holders). It checks that the release was sent twice to every master when
// go-redis may resend it, and once otherwise. The steps run on new masters until they
// could be set up (replayedReleaseOnce), at most three times: a busy machine can delay a
// release into a window for polling clients, and then nothing is handed over as the
// steps need.
func replayedReleaseThroughGoRedis(t *testing.T, rcase replayCase) (twoHolders bool) {
	t.Helper()
	retryWhileNoteLost(t, func() bool {
		var setUp bool
		twoHolders, setUp = replayedReleaseOnce(t, rcase)
		return setUp
	})
	return twoHolders
}

// handOffNoted reports whether the note of key's queue on m describes key as handed to
// token with fence: what a later release of that token needs to hand over without a log
// write (the note's tag, fence and the key's expiry, see the release script).
func handOffNoted(t *testing.T, m *redistest.Master, key, token string, fence uint64) bool {
	t.Helper()
	head, _, _ := strings.Cut(valueOn(t, m, key+redlock.QueueSuffix), "\n")
	_, note, _ := strings.Cut(head, " ")
	at, err := m.Admin().PExpireTime(adminCtx(t), key).Result()
	if err != nil {
		t.Fatalf("PEXPIRETIME %s on %s: %v", key, m.Addr, err)
	}
	return note == fmt.Sprintf("%s:%d:%d", redlock.TokenTag(token), fence, at.Milliseconds())
}

// replayedReleaseOnce runs the steps once on new masters; setUp is false when a release fell
// in a window on some master, so that the steps could not go on.
func replayedReleaseOnce(t *testing.T, rcase replayCase) (twoHolders, setUp bool) {
	cl := redistest.Start(t, redistest.Options{Masters: 3})
	ctx := context.Background()
	const key = "replayed-release-e2e"
	const yTTL = 20 * time.Second
	var proxies []*crashProxy
	var xClients []redis.UniversalClient
	for _, m := range cl.Masters {
		m := m
		p := startCrashProxy(t, m.Addr, func() error {
			// A command after the release's reply runs once the master wrote that event
			// loop's output, the hand-off notice to Y included: the crash comes after them.
			if err := m.Admin().Ping(context.Background()).Err(); err != nil {
				return err
			}
			if err := m.Kill(); err != nil {
				return err
			}
			return m.Restart()
		})
		proxies = append(proxies, p)
		rc := redis.NewClient(&redis.Options{Addr: p.ln.Addr().String(), Username: redistest.LockUser,
			Password: redistest.LockPassword, DialTimeout: time.Second, MaxRetries: rcase.clientRetries}) // go-redis defaults otherwise
		t.Cleanup(func() { _ = rc.Close() })
		if rcase.hook != nil {
			rc.AddHook(rcase.hook)
		}
		xClients = append(xClients, rc)
	}
	x, err := rcase.newX(xClients, redlock.Options{NodeTimeout: testNodeTimeout, CleanupTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = x.Close() })
	if rcase.raiseTo > 0 {
		for _, rc := range xClients {
			rc.(*redis.Client).Options().MaxRetries = rcase.raiseTo // the live options: go-redis reads them per command
		}
	}
	redlock.SetRetryableCommands(x, rcase.retryable)
	h := newClient(t, cl, redlock.Options{})
	lh := acquireEverywhere(t, h, cl, key)

	type result struct {
		l   *redlock.Lock
		err error
	}
	got := make(chan result, 1)
	actx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	go func() {
		l, err := x.Acquire(actx, key, 30*time.Second)
		got <- result{l, err}
	}()
	waitUntil(t, "X queued on every master", func() bool {
		for _, m := range cl.Masters {
			if q := valueOn(t, m, key+redlock.QueueSuffix); strings.Count(q, "\n") < 2 {
				return false
			}
		}
		return true
	})
	// Y: a waiter of another Client (MaxRetries -1, not behind the proxies), its steps run
	// by the test with the code Acquire runs; its ticket is later than X's.
	yc := newClient(t, cl, redlock.Options{})
	y := redlock.NewStepWaiter(ctx, yc, key, yTTL)
	defer y.Leave()
	if err := y.Attempt(ctx); !errors.Is(err, redlock.ErrTaken) {
		t.Fatalf("Y's first attempt: %v, want ErrTaken (queued)", err)
	}
	outsideWindow(t, cl.Masters[0])
	if err := lh.Release(ctx); err != nil {
		t.Fatal(err)
	}
	r := <-got
	if r.err != nil {
		t.Fatalf("X's Acquire: %v", r.err)
	}
	lx := r.l
	// Acquire returns at the majority: the last master's hand-off may still be on its way
	// (a busy machine).
	waitUntil(t, "X handed the key on every master", func() bool { return holders(t, cl, key, lx.Token()) == len(cl.Masters) })
	for _, m := range cl.Masters {
		if !handOffNoted(t, m, key, lx.Token(), lx.Fence()) {
			// H's release fell in a window there (outsideWindow reads one master's clock,
			// a busy machine ran the release later): X set the key itself, and X's
			// release hands over with a log write, which the crash does not undo.
			t.Logf("%s: the key was not handed to X with a note (queue %q)", m.Addr, valueOn(t, m, key+redlock.QueueSuffix))
			return false, false
		}
	}
	// Y renews its place: its entry's lease may have run out while a busy machine got here.
	if err := y.Attempt(ctx); !errors.Is(err, redlock.ErrTaken) {
		t.Fatalf("Y's renewal: %v, want ErrTaken (queued)", err)
	}
	for _, p := range proxies {
		p.arm(lx.Token())
	}
	outsideWindow(t, cl.Masters[0])
	yFrom := time.Now()
	rerr := lx.Release(ctx)
	for i, p := range proxies {
		select {
		case err := <-p.crashed:
			if err != nil {
				t.Fatalf("crash and restart of master %d: %v", i, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("master %d: the release never reached the proxy", i)
		}
	}
	for i, p := range proxies {
		p.mu.Lock()
		dropped := string(p.dropped)
		p.mu.Unlock()
		if dropped == ":1\r\n" {
			t.Logf("master %d: X's release was not handed to Y (reply 1: a window for polling clients)", i)
			return false, false
		}
		if dropped != ":2\r\n" {
			t.Fatalf("master %d: the dropped reply is %q, want :2 (handed to Y)", i, dropped)
		}
		// Release returns at a majority: the replay to the last master may still be on its way.
		if !rcase.resends() {
			continue // nothing to wait for: the count is checked below
		}
		waitUntil(t, "go-redis replayed the release to master "+strconv.Itoa(i), func() bool {
			p.mu.Lock()
			defer p.mu.Unlock()
			return p.seen >= 2
		})
	}
	for i, p := range proxies {
		p.mu.Lock()
		t.Logf("master %d: the release reached it %d time(s) by now", i, p.seen)
		p.mu.Unlock()
	}
	t.Logf("X's release returned %v", rerr)
	if !rcase.resends() {
		// Close returns once every master's batcher is done, go-redis's retries included:
		// a resend would have reached the proxy by then.
		_ = x.Close()
		for i, p := range proxies {
			p.mu.Lock()
			seen := p.seen
			p.mu.Unlock()
			if seen != 1 {
				t.Fatalf("master %d: the release was sent %d times, want once", i, seen)
			}
		}
	}
	// The notices go out with the reply the proxy drops; one may be lost in the crash (the
	// master dies while it writes them): a majority of them makes Y's lock.
	waitUntil(t, "Y's hand-off notices from a majority", func() bool { return y.Receive() >= yc.Quorum() })
	t.Logf("Y received %d hand-off notices", y.Receive())
	for y.Receive() > 0 {
		y.Deliver(0, false)
	}
	ly, err := y.TryLock(ctx)
	if err != nil || ly == nil {
		t.Fatalf("Y's lock from the hand-off notices: %v, %v", ly, err)
	}
	z := newClient(t, cl, redlock.Options{})
	lz, err := tryAnswered(ctx, t, z, key, time.Second)
	at := time.Now()
	if err == nil {
		defer func() { _ = lz.Release(ctx) }()
	} else if !errors.Is(err, redlock.ErrTaken) {
		t.Fatalf("Z's TryAcquire: %v", err)
	}
	if at.After(yFrom.Add(yTTL / 2)) {
		t.Fatalf("the steps took %v, too long to tell whether Y's hand-off still held", at.Sub(yFrom))
	}
	if err == nil && at.Before(ly.Deadline()) {
		t.Logf("Z acquired (fence %d) %v before the deadline of Y's lock (fence %d, handed over by X's release)",
			lz.Fence(), ly.Deadline().Sub(at).Round(time.Millisecond), ly.Fence())
		return true, true
	}
	t.Logf("Z refused while Y holds (fence %d): %v", ly.Fence(), err)
	return false, true
}
