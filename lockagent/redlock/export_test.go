package redlock

import (
	"context"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"
)

// QueuedWaiters exposes how many Acquire calls of c wait for key, so tests can order
// waiters without sleeping.
func QueuedWaiters(c *Client, key string) int { return c.notify.queuedWaiters(key) }

// SetSubscriptionLinger sets how long c keeps a key subscribed after its last waiter
// left (subscriptionLinger otherwise). Set it before use.
func SetSubscriptionLinger(c *Client, d time.Duration) {
	c.notify.mu.Lock()
	defer c.notify.mu.Unlock()
	c.notify.linger = d
}

// LingerTimersArmed counts the times c armed a key's linger timer.
func LingerTimersArmed(c *Client) int {
	c.notify.mu.Lock()
	defer c.notify.mu.Unlock()
	return c.notify.lingerArmed
}

// Subscribed reports whether c keeps key subscribed: a waiter waits for it, or the last
// one left recently (the subscription ends when the linger timer fires, the linger after
// that, or a little later).
func Subscribed(c *Client, key string) bool { return c.notify.hot(key) }

// SetBeforeExtendSend makes every Extend of c call f just before its request goes out,
// so tests can order an extension against a concurrent Release. Set it before use.
func SetBeforeExtendSend(c *Client, f func()) { c.beforeExtendSend = f }

// AcquireQueuedScript is the source of a waiter's attempt (acquireQueuedScript), for tests
// that run a waiter's attempts one master at a time.
func AcquireQueuedScript() string { return acquireQueuedScript.Source }

// NewToken is a new lock token.
func NewToken() string { return newToken() }

// TokenTag is how the masters name a token (tokenTag).
func TokenTag(token string) string { return tokenTag(token) }

// StepWaiter is a queued Acquire whose steps a test drives one at a time (the stateful
// protocol tests): its attempts, the hand-off notices it receives, and its tryLock run
// the code Acquire runs, in the order the test chooses.
type StepWaiter struct {
	qw      *queuedWait
	pending []grantMsg // notices received and not yet delivered
}

// GrantNotice is a hand-off notice as the waiter received it.
type GrantNotice = grantMsg

// NewStepWaiter joins key's wait queue as acquireQueued does (subscribed to its grant
// channel, confirmed), without an attempt yet.
func NewStepWaiter(ctx context.Context, c *Client, key string, ttl time.Duration) *StepWaiter {
	ttl = ttl.Truncate(time.Millisecond)
	token := newToken()
	n := len(c.masters)
	qw := &queuedWait{c: c, key: key, ttl: ttl, token: token, tag: tokenTag(token),
		id:     c.id + "/" + strconv.FormatUint(c.seq.Add(1), 10),
		ticket: strconv.FormatInt(time.Now().UnixMicro(), 10),
		grants: make([]grantState, n), queued: make([]time.Time, n), sent: map[uint64]time.Time{}}
	w, confirmed := c.notify.joinQueued(key, token)
	qw.w = w
	c.awaitConfirm(ctx, confirmed, c.opts.nodeTimeout(ttl))
	first := time.Now()
	for i := range qw.queued {
		qw.queued[i] = first
	}
	return &StepWaiter{qw: qw}
}

// Token is the waiter's token.
func (s *StepWaiter) Token() string { return s.qw.token }

// Attempt runs one attempt on every master (acquireQueuedScript).
func (s *StepWaiter) Attempt(ctx context.Context) error {
	_, _, _, err := s.qw.attempt(ctx)
	return err
}

// Receive moves the notices that arrived into the waiter's inbox and returns how many it
// holds; none is delivered yet.
func (s *StepWaiter) Receive() int {
	for {
		select {
		case g := <-s.qw.w.grants:
			s.pending = append(s.pending, g)
		default:
			return len(s.pending)
		}
	}
}

// Deliver hands the i-th notice of the inbox to the waiter (granted); keep leaves it in
// the inbox (to be delivered again: a duplicate), else it goes.
func (s *StepWaiter) Deliver(i int, keep bool) {
	if i < 0 || i >= len(s.pending) {
		return
	}
	s.qw.granted(s.pending[i])
	if !keep {
		s.pending = append(s.pending[:i], s.pending[i+1:]...)
	}
}

// Drop loses the i-th notice of the inbox.
func (s *StepWaiter) Drop(i int) {
	if i >= 0 && i < len(s.pending) {
		s.pending = append(s.pending[:i], s.pending[i+1:]...)
	}
}

// TryLock turns the grants into a Lock when they make one (nil, nil: not yet).
func (s *StepWaiter) TryLock(ctx context.Context) (*Lock, error) {
	return s.qw.tryLock(ctx, lockConfig{})
}

// Leave takes the waiter out of the queue and its subscription.
func (s *StepWaiter) Leave() {
	s.qw.c.notify.leave(s.qw.w)
	s.qw.leave()
}

// SetRetryableCommands lets go-redis retry c's commands (retryable) or not (the default):
// the negative control of the replay tests, which shows what the commands' NoRetry
// prevents. Set it before c's first request.
func SetRetryableCommands(c *Client, retryable bool) {
	for _, m := range c.masters {
		m.retryableCommands.Store(retryable)
	}
}

// OwnedClients are the go-redis clients Open made for c (nil for New's).
func OwnedClients(c *Client) []*redis.Client { return c.owned }

// KeyPrefixAndMaxTTL are the Options c runs with.
func KeyPrefixAndMaxTTL(c *Client) (string, time.Duration) { return c.opts.KeyPrefix, c.opts.MaxTTL }
