package redlock

import (
	"context"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/internal/handofftrace"
)

// notifier wakes waiting Acquire calls when a lock they wait for is released.
//
// The release script PUBLISHes the released token on key+ReleaseChannelSuffix. While a
// key has waiters in this Client, one shared subscription per master listens on that
// channel (one pub/sub connection per master per Client, whatever the number of keys and
// waiters). A release by this Client wakes its local waiters directly, without waiting for
// the round trip.
//
// Fairness between processes: a local hand-off always wins (the woken waiter's SET is
// queued behind the release on every master, while a waiter in another process only
// hears of the release once it ran), so a busy Client would starve the others. A Client
// therefore hands a key to its own waiters at most maxLocalHandOffs times in a row; the
// next release completes first, its notification says the lock is free, and the local
// waiter then competes like a remote one (same small jitter). Notifications of a local
// hand-off carry handedOffMark: other processes' waiters ignore them and keep waiting
// instead of colliding with the waiter that already has the lock (which would only
// widen their jitter window). A process with one waiter against another with many thus
// gets about one lock in 2*(maxLocalHandOffs+1) releases.
//
// With the wait queue (the default, see doc.go) none of the local hand-off applies: the
// masters hand a released lock to the first waiter in their queue, whatever its Client,
// and tell it on its Client's grant channel (key+GrantChannelInfix+id), which this
// notifier also subscribes and routes to the waiter by token (deliverGrant). A key's
// channels stay subscribed for subscriptionLinger after its last waiter left, so that a
// Client that locks it again soon is listening before its first queued attempt.
//
// Waiters of a key queue in arrival order: a notification wakes the oldest waiter (or
// waits for it to finish its current attempt), so local waiters get the lock first come, first served, and one
// release costs one attempt instead of a stampede. Notifications are an optimisation
// only: every waiter also wakes when the key expires (PTTL) or after a capped random
// delay, so a lost notification, a dead subscriber or a holder from another Redlock
// library (which publishes nothing) costs latency, never correctness.
type notifier struct {
	c    *Client
	mu   sync.Mutex
	keys map[string]*keyQueue
	subs []*subscriber // per master, started on first use
	done bool
	// linger is how long a key stays subscribed after its last waiter left
	// (subscriptionLinger); lingerArmed counts the times a key's linger timer was armed.
	linger      time.Duration
	lingerArmed int
}

type keyQueue struct {
	key       string
	waiters   []*waiter          // arrival order
	byToken   map[string]*waiter // waiters in the masters' wait queue, by their token
	pending   bool               // a notification found no idle waiter: the next one to go idle takes it
	pendLocal bool               // ... and it came from this Client
	confirmed chan struct{}
	confirmOk bool
	recent    [8]string // tokens already delivered: each release arrives once per master
	next      int
	localRun  int // consecutive hand-offs to this Client's own waiters
	// The subscription lingers subscriptionLinger after the last waiter left (lastLeft).
	// One timer per key ends it, armed while lingering: a Client that locks the key in a
	// loop re-arms nothing, so its waiting process is not woken by a timer per acquisition.
	lastLeft  time.Time
	linger    *time.Timer
	lingering bool
}

// maxLocalHandOffs bounds consecutive hand-offs of a key to this Client's own waiters
// before a release lets other processes compete (see notifier).
const maxLocalHandOffs = 4

// handedOffMark ends a release notification when the releasing Client handed the lock to
// one of its own waiters.
const handedOffMark = "+"

type waiter struct {
	q      *keyQueue
	wake   chan bool // capacity 1; true: released by this Client (no jitter needed)
	busy   bool      // attempting: notifications go to the next waiter
	token  string    // in the masters' wait queue: the token a release hands the lock to
	grants chan grantMsg
}

// grantMsg is one master's notice that a release handed the lock to a waiter: fence is
// the register the hand-off raised, or "r" and the register as read when it did not raise
// it; attempt is the waiter's attempt that last renewed its entry there (the hand-off ran
// after it).
type grantMsg struct {
	master  int
	fence   string
	attempt string
	turnIn  time.Duration // not a grant: the key is free for everyone in turnIn, try then
}

func newNotifier(c *Client) *notifier {
	return &notifier{c: c, keys: map[string]*keyQueue{}, linger: subscriptionLinger}
}

// queued reports whether key has local waiters (a newcomer then queues behind them).
func (n *notifier) queued(key string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	q := n.keys[key]
	return q != nil && len(q.waiters) > 0
}

// join queues a waiter for key and makes sure the key's channel is subscribed. The
// returned channel is closed when a subscription on some master is confirmed.
func (n *notifier) join(key string) (*waiter, <-chan struct{}) {
	n.mu.Lock()
	defer n.mu.Unlock()
	q := n.keys[key]
	newKey := q == nil
	if newKey {
		q = &keyQueue{key: key, confirmed: make(chan struct{})}
		n.keys[key] = q
	}
	w := &waiter{q: q, wake: make(chan bool, 1), busy: true}
	q.waiters = append(q.waiters, w)
	if newKey && !n.done {
		n.startSubscribersLocked()
		for _, s := range n.subs {
			s.kick()
		}
	}
	return w, q.confirmed
}

// hot reports whether key was waited for recently by this Client (its subscription is
// still up): an Acquire then starts in the wait queue.
func (n *notifier) hot(key string) bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.keys[key] != nil
}

// joinQueued is join for a waiter of the masters' wait queue: hand-offs to token are
// delivered on its grants channel.
func (n *notifier) joinQueued(key, token string) (*waiter, <-chan struct{}) {
	w, confirmed := n.join(key)
	n.mu.Lock()
	defer n.mu.Unlock()
	q := w.q
	if q.byToken == nil {
		q.byToken = map[string]*waiter{}
	}
	w.token = token
	w.grants = make(chan grantMsg, 4*len(n.c.masters))
	q.byToken[token] = w
	return w, confirmed
}

// newGrantMsg reads a notice's fields; a fence of "w<ms>" is a window notice (turnIn).
func newGrantMsg(i int, fence, attempt string) grantMsg {
	g := grantMsg{master: i, fence: fence, attempt: attempt}
	if ms, ok := strings.CutPrefix(fence, "w"); ok {
		n, err := strconv.Atoi(ms)
		if err != nil || n < 0 {
			n = 0
		}
		g.turnIn = time.Duration(n+1) * time.Millisecond // the window's end, rounded up
	}
	return g
}

// retoken moves w to a new token: hand-offs to the old one are no longer delivered.
func (n *notifier) retoken(w *waiter, token string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(w.q.byToken, w.token)
	w.token = token
	w.q.byToken[token] = w
	for len(w.grants) > 0 { // notices for the old token (only this waiter receives)
		<-w.grants
	}
}

// deliverGrant routes a hand-off notice (payload "<token> <fence> <attempt>") from master
// i to its waiter. A full channel drops it: the waiter's next attempt finds the key its
// own.
func (n *notifier) deliverGrant(key string, i int, payload string) {
	token, rest, _ := strings.Cut(payload, " ")
	fence, attempt, _ := strings.Cut(rest, " ")
	n.mu.Lock()
	defer n.mu.Unlock()
	q := n.keys[key]
	if q == nil {
		return
	}
	if w := q.byToken[token]; w != nil {
		g := newGrantMsg(i, fence, attempt)
		if g.turnIn == 0 {
			handofftrace.Notice(i) // a hand-off, not a window
		}
		select {
		case w.grants <- g:
		default:
		}
	}
}

// leave removes w; the last waiter of a key unsubscribes it.
func (n *notifier) leave(w *waiter) {
	n.mu.Lock()
	defer n.mu.Unlock()
	q := w.q
	if w.token != "" {
		delete(q.byToken, w.token)
	}
	for i, x := range q.waiters {
		if x == w {
			q.waiters = append(q.waiters[:i], q.waiters[i+1:]...)
			break
		}
	}
	// A notification w consumed but did not use, or one waiting for the head, passes on.
	select {
	case local := <-w.wake:
		n.wakeLocked(q, local)
	default:
		if q.pending {
			q.pending = false
			n.wakeLocked(q, q.pendLocal)
		}
	}
	if len(q.waiters) == 0 && n.keys[q.key] == q {
		// Keep the subscription a while: a Client that locks the key again soon (a worker
		// in a loop) would otherwise subscribe again every time, and a hand-off sent before
		// its subscription is confirmed is only found by its next attempt.
		q.lastLeft = time.Now()
		if !q.lingering && !n.done {
			q.lingering = true
			n.lingerArmed++
			if q.linger == nil {
				q.linger = time.AfterFunc(n.linger, func() { n.endLinger(q) })
			} else {
				q.linger.Reset(n.linger)
			}
		}
	}
}

// endLinger ends q's subscription once its last waiter left n.linger ago and none came
// since; while one waits, the next to leave arms the timer again. After close it does
// nothing (and leave arms nothing).
func (n *notifier) endLinger(q *keyQueue) {
	n.mu.Lock()
	defer n.mu.Unlock()
	q.lingering = false
	if len(q.waiters) > 0 || n.keys[q.key] != q || n.done {
		return
	}
	if left := n.linger - time.Since(q.lastLeft); left > 0 {
		q.lingering = true // a waiter came and left since the timer was armed
		q.linger.Reset(left)
		return
	}
	delete(n.keys, q.key)
	for _, s := range n.subs {
		s.kick()
	}
}

// subscriptionLinger is how long a key's channels stay subscribed after its last waiter
// left (notifier.linger; tests shorten it).
const subscriptionLinger = 5 * time.Second

// idle marks w as waiting again after a failed attempt. A notification that arrived while
// the head was busy is handed to the head when it goes idle.
func (n *notifier) idle(w *waiter) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w.busy = false
	if q := w.q; q.pending && len(q.waiters) > 0 && q.waiters[0] == w {
		q.pending = false
		n.wakeLocked(q, q.pendLocal)
	}
}

// attempting marks w busy when it wakes for another reason (expiry, retry delay).
func (n *notifier) attempting(w *waiter) {
	n.mu.Lock()
	defer n.mu.Unlock()
	w.busy = true
}

// handOff is called when this Client is about to release key. It reports whether one of
// this Client's waiters takes the lock at once (then call wakeLocal once the release is
// queued: local waiters need not wait for the PUBLISH to come back, nor even for the
// release to complete, since each master runs a Client's commands in the order they were
// queued, so a woken waiter's SET reaches every master after the release). Otherwise
// call wakeAfterRelease once the release completed.
func (n *notifier) handOff(key, token string) bool {
	if n.c.queueing() {
		// The masters hand the lock to the first waiter in their queue, this Client's or
		// another's: a local shortcut would overtake it.
		return false
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	q := n.keys[key]
	if q == nil || len(q.waiters) == 0 {
		return false
	}
	n.rememberLocked(q, token) // our own PUBLISH, when it comes back, is not news
	if q.localRun < maxLocalHandOffs {
		q.localRun++
		return true
	}
	q.localRun = 0
	return false
}

// wakeLocal wakes a local waiter for a hand-off (see handOff).
func (n *notifier) wakeLocal(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if q := n.keys[key]; q != nil {
		n.wakeLocked(q, true)
	}
}

// wakeAfterRelease wakes a local waiter once this Client's release completed; it
// competes with other processes' waiters (jitter), like them.
func (n *notifier) wakeAfterRelease(key string) {
	if n.c.queueing() {
		return // the masters publish a release they did not hand off; waiters hear it
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if q := n.keys[key]; q != nil {
		n.wakeLocked(q, false)
	}
}

// deliver handles a release notification from a master (msg: the token, plus
// handedOffMark when the releasing Client handed the lock to its own waiter).
func (n *notifier) deliver(key, msg string) {
	token, handedOff := strings.CutSuffix(msg, handedOffMark)
	n.mu.Lock()
	defer n.mu.Unlock()
	q := n.keys[key]
	if q == nil {
		return
	}
	for _, t := range q.recent {
		if t == token {
			return
		}
	}
	n.rememberLocked(q, token)
	if handedOff {
		return // another process's waiter has it already: attempting now only collides
	}
	q.localRun = 0 // the key was free for everyone: our own streak starts again
	n.wakeLocked(q, false)
}

func (n *notifier) rememberLocked(q *keyQueue, token string) {
	q.recent[q.next] = token
	q.next = (q.next + 1) % len(q.recent)
}

// wakeLocked wakes the oldest waiter. When it is busy attempting, the notification waits
// for it (its attempt may have been refused just before the release) instead of going to
// a younger waiter: first come, first served.
func (n *notifier) wakeLocked(q *keyQueue, local bool) {
	if len(q.waiters) == 0 {
		return
	}
	head := q.waiters[0]
	if head.busy {
		q.pending, q.pendLocal = true, local
		return
	}
	head.busy = true
	select {
	case head.wake <- local:
	default:
	}
}

// queuedWaiters returns how many waiters key has (tests).
func (n *notifier) queuedWaiters(key string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	if q := n.keys[key]; q != nil {
		return len(q.waiters)
	}
	return 0
}

func (n *notifier) confirm(key string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	if q := n.keys[key]; q != nil && !q.confirmOk {
		q.confirmOk = true
		close(q.confirmed)
	}
}

// wanted returns the channels that should be subscribed now.
func (n *notifier) wanted() map[string]struct{} {
	n.mu.Lock()
	defer n.mu.Unlock()
	set := make(map[string]struct{}, 2*len(n.keys))
	for k := range n.keys {
		set[k+ReleaseChannelSuffix] = struct{}{}
		if n.c.queueing() {
			set[k+n.grantSuffix()] = struct{}{}
		}
	}
	return set
}

// grantSuffix ends this Client's grant channels: key+grantSuffix.
func (n *notifier) grantSuffix() string { return GrantChannelInfix + n.c.id }

// channelKey tells which key a channel belongs to and whether it is a grant channel.
func (n *notifier) channelKey(ch string) (key string, grant bool) {
	if k, ok := strings.CutSuffix(ch, n.grantSuffix()); ok {
		return k, true
	}
	return strings.TrimSuffix(ch, ReleaseChannelSuffix), false
}

func (n *notifier) startSubscribersLocked() {
	if n.subs != nil {
		return
	}
	for _, m := range n.c.masters {
		s := &subscriber{n: n, m: m, kicks: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
		n.subs = append(n.subs, s)
		go s.run()
	}
}

func (n *notifier) close() {
	n.mu.Lock()
	n.done = true
	subs := n.subs
	for _, q := range n.keys {
		if q.linger != nil {
			q.linger.Stop()
		}
	}
	n.mu.Unlock()
	for _, s := range subs {
		close(s.stop)
		<-s.done
	}
}

// subscriber keeps one master's pub/sub connection subscribed to the wanted channels.
// Each master has its own goroutine, so a stopped master stalls only its own
// subscription.
type subscriber struct {
	n     *notifier
	m     *master
	kicks chan struct{}
	stop  chan struct{}
	done  chan struct{}
}

func (s *subscriber) kick() {
	select {
	case s.kicks <- struct{}{}:
	default:
	}
}

func (s *subscriber) run() {
	defer close(s.done)
	ps := s.m.rdb.Subscribe(context.Background())
	defer ps.Close()
	var reader sync.WaitGroup
	defer reader.Wait()
	started := false
	current := map[string]struct{}{}
	for {
		select {
		case <-s.stop:
			_ = ps.Close() // ends the reader
			return
		case <-s.kicks:
		}
		want := s.n.wanted()
		var add, drop []string
		for ch := range want {
			if _, ok := current[ch]; !ok {
				add = append(add, ch)
			}
		}
		for ch := range current {
			if _, ok := want[ch]; !ok {
				drop = append(drop, ch)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), s.n.c.opts.CleanupTimeout)
		if len(add) > 0 {
			// go-redis remembers the channels even when the write fails and subscribes
			// them again when it reconnects.
			_ = ps.Subscribe(ctx, add...)
			for _, ch := range add {
				current[ch] = struct{}{}
			}
		}
		if len(drop) > 0 {
			_ = ps.Unsubscribe(ctx, drop...)
			for _, ch := range drop {
				delete(current, ch)
			}
		}
		cancel()
		if !started && len(add) > 0 {
			started = true
			msgs := ps.ChannelWithSubscriptions()
			reader.Add(1)
			go func() {
				defer reader.Done()
				for msg := range msgs {
					switch m := msg.(type) {
					case *redis.Subscription:
						if m.Kind == "subscribe" {
							key, grant := s.n.channelKey(m.Channel)
							if grant || !s.n.c.queueing() {
								s.n.confirm(key)
							}
						}
					case *redis.Message:
						if key, grant := s.n.channelKey(m.Channel); grant {
							s.n.deliverGrant(key, s.m.index, m.Payload)
						} else {
							s.n.deliver(key, m.Payload)
						}
					}
				}
			}()
		}
	}
}
