package bench

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// relayImpl names the bare relay in a worker's spec: not a lock, a hand-off by notice
// without the lock's work, with as many processes (see relayWork).
const relayImpl = "relay"

// relayStop is the message that ends a relay: every worker stops on it.
const relayStop = "stop"

// relayGrace bounds a relay worker's wait for its turn after the window and the hold: a turn or a stop
// lost on every master ends the relay then, not at the bench's limit for a worker, and
// the worker reports that it gave up (a variable for the tests).
var relayGrace = 5 * time.Second

// relaySubscribe bounds each master's subscription, relayPublish each PUBLISH (variables
// for the tests).
var relaySubscribe, relayPublish = 10 * time.Second, 5 * time.Second

// errRelayStalled is what a relay worker that gave up waiting reports.
var errRelayStalled = errors.New("relay: no turn and no stop came until well after the window: a turn was lost")

// serveRelay is a relay worker (ServeWorker with spec.Impl relayImpl): it subscribes to its
// own channel and the relay's stop channel on every master at once (a master that does not
// confirm within relaySubscribe is left out, while a majority does), says "ready", waits for the
// start time and runs relayWork. It receives as the library's notifier does: go-redis's message
// channel, then one reader goroutine per master.
func serveRelay(ctx context.Context, r *bufio.Reader, out io.Writer, spec workerSpec, clients []*redis.Client, report func(workerResult) error) error {
	defer func() { _ = closeAll(clients) }()
	if spec.Count < 1 || spec.Index < 0 || spec.Index >= spec.Count {
		return report(workerResult{Err: fmt.Sprintf("relay worker %d of %d", spec.Index, spec.Count)})
	}
	// The worker's context: it ends with ctx, or when the bench closes stdin (below).
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	msgs := make(chan string, 16*len(clients))
	var subs []*redis.PubSub
	var readers sync.WaitGroup
	defer func() {
		stop() // a reader blocked on msgs returns (before the start, nothing else ends it)
		for _, s := range subs {
			_ = s.Close() // ends its channel, and so its reader
		}
		readers.Wait()
	}()
	// Every master at once, each within its own bound: a master that hangs does not use up
	// the others' time.
	confirmed := make([]*redis.PubSub, len(clients))
	errs := make([]error, len(clients))
	var subscribing sync.WaitGroup
	for i, c := range clients {
		subscribing.Add(1)
		go func() {
			defer subscribing.Done()
			sctx, cancel := context.WithTimeout(wctx, relaySubscribe)
			defer cancel()
			s := c.Subscribe(sctx, relayChannel(spec.Key, spec.Index), spec.Key+":"+relayStop)
			for range 2 { // both subscriptions confirmed before "ready"
				if _, err := s.Receive(sctx); err != nil {
					errs[i] = err
					_ = s.Close()
					return
				}
			}
			confirmed[i] = s
		}()
	}
	subscribing.Wait()
	var lastErr error
	for i, s := range confirmed {
		if s != nil {
			subs = append(subs, s)
		} else {
			lastErr = errs[i]
		}
	}
	if len(subs) < majority(len(clients)) {
		return report(workerResult{Err: fmt.Sprintf("relay: subscribed on %d of %d masters, a majority needed: %v", len(subs), len(clients), lastErr)})
	}
	for _, s := range subs {
		ch := s.Channel()
		readers.Add(1)
		go func() {
			defer readers.Done()
			for m := range ch {
				select {
				case msgs <- m.Payload:
				case <-wctx.Done():
					for range ch { // until the subscription closes: go-redis's sender never waits on us
					}
					return
				}
			}
		}()
	}
	startAt, err := awaitStart(r, out)
	if err != nil {
		return err
	}
	go func() {
		_, _ = io.Copy(io.Discard, r) // the bench closes stdin once it has the result
		stop()
	}()
	res, err := relayWork(wctx, spec, clients, msgs, startAt)
	if err != nil {
		return report(workerResult{Err: err.Error()})
	}
	return report(res)
}

func relayChannel(key string, i int) string { return key + ":" + strconv.Itoa(i) }

// relayWork passes a turn around a ring of spec.Count processes, through every master:
// worker 0 takes turn 1 at startAt; a worker whose turn t came from a majority of the
// masters (one message each) holds it for spec.Hold, as a lock holder does, then publishes
// t+1 on the next worker's channel on every master at once, each through a sender
// goroutine of its own, as the library's Client sends a release through one per master.
// No script, no key, no queue, no fsync: a turn is one PUBLISH per master and a majority
// of messages back, with as many processes as the lock's cell sleeping meanwhile. Each
// turn is reported as a hold (from its majority to the publish calls) whose fence is the
// turn number, so the lock's checks and gaps apply as they are. The worker that takes a
// turn after the window ends publishes the stop instead; one still waiting relayGrace
// after the window's end stops too.
func relayWork(ctx context.Context, spec workerSpec, clients []*redis.Client, msgs <-chan string, startAt int64) (res workerResult, err error) {
	res = workerResult{Holds: [][4]int64{}, Fenced: true}
	quorum := majority(len(clients))
	end := startAt + int64(spec.Duration)
	next := relayChannel(spec.Key, (spec.Index+1)%spec.Count)
	heard := map[int]int{}
	done := 0 // the last turn taken: later messages of it (the minority's) are ignored
	type message struct{ channel, payload string }
	queues := make([]chan message, len(clients))
	var senders sync.WaitGroup
	for i, c := range clients {
		queues[i] = make(chan message, 4)
		senders.Add(1)
		go func() {
			defer senders.Done()
			for m := range queues[i] {
				pctx, cancel := context.WithTimeout(context.Background(), relayPublish)
				_ = c.Publish(pctx, m.channel, m.payload).Err()
				cancel()
			}
		}()
	}
	publish := func(channel, payload string) {
		for _, q := range queues {
			select {
			case q <- message{channel, payload}:
			default: // a master that has not taken the last ones: the others' majority goes on
			}
		}
	}
	if err := sleepUntil(startAt); err != nil {
		return res, err
	}
	cpu0, wake0 := processUsage()
	defer func() { // the result's, at every return, once the last publish went out
		for _, q := range queues {
			close(q)
		}
		senders.Wait()
		cpu1, wake1 := processUsage()
		res.CPU, res.Wakeups = int64(cpu1-cpu0), wake1-wake0
	}()
	// The last turn taken before the end is held for the hold: its stop comes after that.
	giveUp := time.NewTimer(time.Duration(end-startAt) + spec.Hold + relayGrace)
	defer giveUp.Stop()
	waitFrom := startAt
	turn := 0
	if spec.Index == 0 {
		turn = 1 // the first turn needs no message
	}
	for {
		for turn == 0 {
			var m string
			select {
			case m = <-msgs:
			case <-ctx.Done():
				return res, nil
			case <-giveUp.C:
				res.Failed++
				res.Errors = append(res.Errors, errRelayStalled.Error())
				return res, nil
			}
			if m == relayStop {
				return res, nil
			}
			t, err := strconv.Atoi(m)
			if err != nil || t <= done {
				continue
			}
			if heard[t]++; heard[t] == quorum {
				turn = t
				for k := range heard {
					if k <= t {
						delete(heard, k)
					}
				}
			}
		}
		t1, _ := monoNow()
		if t1 >= end {
			publish(spec.Key+":"+relayStop, relayStop)
			return res, nil
		}
		hold(spec.Hold)
		t2, _ := monoNow()
		res.Holds = append(res.Holds, [4]int64{t1 - startAt, t2 - t1, int64(turn), t1 - waitFrom})
		publish(next, strconv.Itoa(turn+1))
		done, turn, waitFrom = turn, 0, t2
	}
}
