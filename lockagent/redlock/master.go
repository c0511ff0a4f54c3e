package redlock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/internal/handofftrace"
)

// master multiplexes every operation of the Client on one Redis master: a batcher
// goroutine takes whatever requests are waiting and sends them as one pipeline. A lone
// request goes out at once (no added latency when idle); under load the requests that
// arrive while a pipeline is in flight form the next one, which is what lets the server
// fsync many writes at once under appendfsync always (group commit).
//
// One pipeline is in flight per master at a time. That keeps the master's commands in
// the order they were issued: a cleanup release sent after an acquire that timed out
// reaches the server after that acquire, even when the master was paused in between.
// Callers never wait on the pipeline itself: each waits for its own reply with its own
// deadline, so a stuck master costs them the node timeout only.
type master struct {
	index    int
	addr     string
	rdb      redis.UniversalClient
	maxBatch int
	execMax  time.Duration // bound of one pipeline (Options.CleanupTimeout)

	mu     sync.RWMutex // guards closed and sends on queue
	closed bool
	queue  chan *request
	done   chan struct{} // closed when the batcher exited

	scriptsLoaded bool       // batcher goroutine only
	scriptsVia    int        // batcher goroutine only: viaFunctions or viaScripts
	live          []*request // batcher goroutine only: exec's buffer
	// execCtx bounds the pipelines (batcher goroutine only). It is reused while at least
	// half of execMax is left, so a pipeline gets between execMax/2 and execMax: a
	// context per pipeline would cost several allocations for a bound that only matters
	// when a master is stuck.
	execCtx      context.Context
	execCancel   context.CancelFunc
	execDeadline time.Time

	// failure is the connection-level error of this master's last pipeline, nil once a
	// pipeline got answers again. A caller that gave up waiting (node timeout) names it as
	// the likely cause: go-redis may spend longer than the node timeout retrying a
	// refused dial.
	failure atomic.Pointer[masterFailure]

	// retryableCommands lets go-redis retry this master's commands (tests only: the
	// negative control of the replay tests; see onceOnly).
	retryableCommands atomic.Bool
}

// masterFailure is a connection-level failure of a master's pipeline and when it ended.
type masterFailure struct {
	err error
	at  time.Time
}

// recentFailure returns the connection error of the master's last pipeline when it
// failed less than within ago, nil otherwise.
func (m *master) recentFailure(within time.Duration) error {
	f := m.failure.Load()
	if f == nil || time.Since(f.at) > within {
		return nil
	}
	return f.err
}

// call is one command of a request: a plain command (args), or a script: args holds
// FCALL fn numkeys keys... args..., shaArgs the same as EVALSHA sha numkeys keys... args...
type call struct {
	script  *script
	args    []any
	shaArgs []any
}

// scriptCall builds the FCALL and the EVALSHA command of s once; the masters of a round
// share them, each sends the one its way of running scripts needs.
func scriptCall(s *script, keys []string, args ...any) call {
	all := make([]any, 0, 3+len(keys)+len(args))
	all = append(all, "fcall", s.fnArg, len(keys))
	for _, k := range keys {
		all = append(all, k)
	}
	all = append(all, args...)
	sha := make([]any, len(all))
	copy(sha, all)
	sha[0], sha[1] = "evalsha", s.shaArg
	return call{script: s, args: all, shaArgs: sha}
}

const (
	statePending int32 = iota
	stateSent
	stateAbandoned
	stateDropped
)

// request is a group of calls for one master, executed in order in one pipeline.
type request struct {
	master  *master
	round   *round
	calls   []call
	sendBy  time.Time // not sent after this: the caller has given up
	queued  time.Time
	state   atomic.Int32
	cmds    []*redis.Cmd // results, valid after completion with err == nil
	cmdBuf  [2]*redis.Cmd
	err     error // the request was not sent, or the pipeline failed before it
	latency time.Duration
	seen    bool // the round's caller took the completion (owned by it)
}

// completedAt is when the request completed: its reply (or its failure) was in hand, so
// the master ran it, if at all, before then. Valid after completion.
func (r *request) completedAt() time.Time { return r.queued.Add(r.latency) }

// complete hands the request back to its round, once.
func (r *request) complete(err error) {
	r.err = err
	r.latency = time.Since(r.queued)
	r.round.deliver(r)
}

func newMaster(index int, addr string, rdb redis.UniversalClient, opts Options) *master {
	m := &master{index: index, addr: addr, rdb: rdb, maxBatch: opts.MaxBatch, execMax: opts.CleanupTimeout,
		queue: make(chan *request, queuePerBatch*opts.MaxBatch), done: make(chan struct{})}
	go m.run()
	return m
}

// send queues r without ever waiting: when the master's queue is full (its pipeline is
// stuck, e.g. a paused server) or the master is closed, r completes with an error at
// once. A round sends to every master from one goroutine, so a wait here would delay the
// healthy masters behind a stuck one (past their sendBy) and turn one bad master into a
// failed round.
func (m *master) send(r *request) {
	r.master = m
	r.queued = time.Now()
	m.mu.RLock()
	defer m.mu.RUnlock()
	if m.closed {
		r.state.Store(stateDropped)
		r.complete(ErrClosed)
		return
	}
	select {
	case m.queue <- r:
	default:
		r.state.Store(stateDropped)
		r.complete(errQueueFull)
	}
}

// queuePerBatch sizes a master's queue: queuePerBatch*MaxBatch requests. Far more than a
// healthy master ever has waiting (each caller has at most a couple of requests in
// flight per master), so only a stuck master fills it.
const queuePerBatch = 16

// errQueueFull is the per-master error of a request that found the master's queue full:
// a kind of node timeout (the master is not keeping up), reported as such.
var errQueueFull = fmt.Errorf("%w (its request queue is full: a pipeline to it is stuck)", ErrNodeTimeout)

// close stops accepting requests; the batcher still sends what is queued (within each
// request's sendBy) and exits. It waits for the batcher.
func (m *master) close() {
	m.mu.Lock()
	if !m.closed {
		m.closed = true
		close(m.queue)
	}
	m.mu.Unlock()
	<-m.done
}

// execContext returns the pipelines' context, renewed when less than half of execMax
// is left.
func (m *master) execContext(now time.Time) context.Context {
	if m.execCtx == nil || m.execDeadline.Sub(now) < m.execMax/2 {
		if m.execCancel != nil {
			m.execCancel()
		}
		m.execDeadline = now.Add(m.execMax)
		m.execCtx, m.execCancel = context.WithDeadline(context.Background(), m.execDeadline)
	}
	return m.execCtx
}

func (m *master) run() {
	defer close(m.done)
	defer func() {
		if m.execCancel != nil {
			m.execCancel()
		}
	}()
	batch := make([]*request, 0, m.maxBatch)
	for {
		first, ok := <-m.queue
		if !ok {
			return
		}
		batch = append(batch[:0], first)
	drain:
		for len(batch) < m.maxBatch {
			select {
			case r, ok := <-m.queue:
				if !ok {
					break drain
				}
				batch = append(batch, r)
			default:
				break drain
			}
		}
		m.exec(batch)
	}
}

// exec sends one batch as one pipeline (a lone command as itself) and completes its
// requests: the ones whose send bound has passed with ErrNodeTimeout, the abandoned ones
// not at all.
func (m *master) exec(batch []*request) {
	now := time.Now()
	live, anyScript := m.admit(batch, now)
	defer func() { clear(live); m.live = live[:0] }() // keep no finished request alive
	if len(live) == 0 {
		return
	}
	ctx := m.execContext(now)
	handofftrace.Sent(m.index)
	execErr := m.pipeline(ctx, live, anyScript)
	if anyScript {
		m.retryScripts(ctx, live)
	}
	var failed error
	for _, r := range live {
		err := pipelineErr(r, execErr)
		if err != nil && failed == nil {
			failed = err
		}
		r.complete(err)
	}
	switch {
	case failed != nil:
		m.failure.Store(&masterFailure{err: describe(failed), at: time.Now()})
	case m.failure.Load() != nil:
		m.failure.Store(nil)
	}
}

// admit returns the requests of batch to send (in m.live's storage), and whether any
// runs a script.
func (m *master) admit(batch []*request, now time.Time) (live []*request, anyScript bool) {
	live = m.live[:0]
	for _, r := range batch {
		if now.After(r.sendBy) {
			if r.state.CompareAndSwap(statePending, stateDropped) {
				r.complete(ErrNodeTimeout)
			}
			continue
		}
		if !r.state.CompareAndSwap(statePending, stateSent) {
			continue // abandoned: the caller is gone and knows it was never sent
		}
		for _, c := range r.calls {
			anyScript = anyScript || c.script != nil
		}
		live = append(live, r)
	}
	return live, anyScript
}

// pipeline builds the commands of live (scripts the way this master runs them) and sends
// them, loading the scripts first where EVALSHA needs them; it returns the pipeline's error.
func (m *master) pipeline(ctx context.Context, live []*request, anyScript bool) error {
	for _, r := range live {
		if len(r.calls) <= len(r.cmdBuf) {
			r.cmds = r.cmdBuf[:len(r.calls)]
		} else {
			r.cmds = make([]*redis.Cmd, len(r.calls))
		}
		for i, c := range r.calls {
			r.cmds[i] = c.command(ctx, m.scriptsVia, true)
		}
	}
	needLoad := anyScript && m.scriptsVia == viaScripts && !m.scriptsLoaded
	if len(live) == 1 && len(live[0].cmds) == 1 && !needLoad {
		// A lone command (the usual case when idle) needs no pipeline.
		return m.rdb.Process(ctx, m.onceOnly(live[0].cmds[0]))
	}
	pipe := m.rdb.Pipeline()
	var loads []*redis.StringCmd
	if needLoad {
		for _, s := range allScripts {
			loads = append(loads, pipe.ScriptLoad(ctx, s.Source))
		}
	}
	for _, r := range live {
		for _, cmd := range r.cmds {
			_ = pipe.Process(ctx, m.onceOnly(cmd))
		}
	}
	_, execErr := pipe.Exec(ctx)
	if len(loads) > 0 {
		loaded := true
		for _, l := range loads {
			loaded = loaded && l.Err() == nil
		}
		m.scriptsLoaded = loaded
	}
	return execErr
}

// pipelineErr is the request-level error: a connection failure shows on every command;
// command-level errors (redis.Nil, script errors) are left to the caller. A command that
// got no reply at all means the pipeline failed before it ran: go-redis does not stamp a
// server error of the connection's handshake (WRONGPASS from AUTH, NOPERM from HELLO)
// onto the commands, so that error is the request's.
func pipelineErr(r *request, execErr error) error {
	if execErr == nil || len(r.cmds) == 0 {
		return nil
	}
	for _, cmd := range r.cmds {
		if cmd.Err() == nil && cmd.Val() == nil {
			return execErr // never answered
		}
	}
	err := r.cmds[0].Err()
	if err == nil || errors.Is(err, redis.Nil) {
		return nil
	}
	var rerr redis.Error
	if errors.As(err, &rerr) {
		return nil // a server reply: the caller interprets it
	}
	return err
}

// command returns the call as a new command: FCALL (via viaFunctions), EVALSHA (via
// viaScripts, sha) or EVAL (viaScripts, !sha: it also caches the script). The shared args
// are only read.
func (c call) command(ctx context.Context, via int, sha bool) *redis.Cmd {
	switch {
	case c.script == nil || via == viaFunctions:
		return redis.NewCmd(ctx, c.args...)
	case sha:
		return redis.NewCmd(ctx, c.shaArgs...)
	}
	args := slices.Clone(c.shaArgs)
	args[0], args[1] = "eval", c.script.Source
	return redis.NewCmd(ctx, args...)
}

func isNoScript(err error) bool {
	return err != nil && redis.HasErrorPrefix(err, "NOSCRIPT")
}
