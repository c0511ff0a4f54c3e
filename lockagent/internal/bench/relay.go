package bench

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// relayImpl names the bare relay in a worker's spec: not a lock, the least a hand-off by
// notice costs with as many processes (see relayWork).
const relayImpl = "relay"

// relayStop is the message that ends a relay: every worker stops on it.
const relayStop = "stop"

// serveRelay is a relay worker (ServeWorker with spec.Impl relayImpl): it subscribes to its
// own channel and the relay's stop channel on every master, says "ready", waits for the
// start time and runs relayWork.
func serveRelay(ctx context.Context, r *bufio.Reader, out io.Writer, spec workerSpec, clients []*redis.Client, report func(workerResult) error) error {
	defer func() { _ = closeAll(clients) }()
	if spec.Count < 1 || spec.Index < 0 || spec.Index >= spec.Count {
		return report(workerResult{Err: fmt.Sprintf("relay worker %d of %d", spec.Index, spec.Count)})
	}
	msgs := make(chan string, 16*len(clients))
	var subs []*redis.PubSub
	defer func() {
		for _, s := range subs {
			_ = s.Close()
		}
	}()
	sctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	for _, c := range clients {
		s := c.Subscribe(sctx, relayChannel(spec.Key, spec.Index), spec.Key+":"+relayStop)
		subs = append(subs, s)
		for range 2 { // both subscriptions confirmed before "ready"
			if _, err := s.Receive(sctx); err != nil {
				cancel()
				return report(workerResult{Err: "relay: subscribing: " + err.Error()})
			}
		}
	}
	cancel()
	for _, s := range subs {
		go func() {
			for {
				m, err := s.ReceiveMessage(ctx)
				if err != nil {
					return // closed when the worker ends
				}
				select {
				case msgs <- m.Payload:
				case <-ctx.Done():
					return
				}
			}
		}()
	}
	if _, err := fmt.Fprintln(out, "ready"); err != nil {
		return err
	}
	line, err := r.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("bench relay worker: reading the start time: %w", err)
	}
	startAt, err := strconv.ParseInt(strings.TrimSpace(string(line)), 10, 64)
	if err != nil {
		return fmt.Errorf("bench relay worker: start time: %w", err)
	}
	ctx, cancel = context.WithCancel(ctx)
	defer cancel()
	go func() {
		_, _ = io.Copy(io.Discard, r) // the bench closes stdin once it has the result
		cancel()
	}()
	res, err := relayWork(ctx, spec, clients, msgs, startAt)
	if err != nil {
		return report(workerResult{Err: err.Error()})
	}
	return report(res)
}

func relayChannel(key string, i int) string { return key + ":" + strconv.Itoa(i) }

// relayWork passes a turn around a ring of spec.Count processes, through every master:
// worker 0 takes turn 1 at startAt; a worker whose turn t came from a majority of the
// masters (one message each) holds it for spec.Hold, as a lock holder does, then publishes
// t+1 on the next worker's channel on every master at once, one goroutine per master, as
// the library sends a release. No script, no key, no queue, no fsync: a turn is one PUBLISH
// per master and a majority of messages back, with as many processes as the lock's cell
// sleeping meanwhile. Each turn is reported as a hold (from its majority to the publish
// calls) whose fence is the turn number, so the lock's checks and gaps apply as they are.
// The worker that takes a turn after the window ends publishes the stop instead.
func relayWork(ctx context.Context, spec workerSpec, clients []*redis.Client, msgs <-chan string, startAt int64) (res workerResult, err error) {
	res = workerResult{Holds: [][4]int64{}, Fenced: true}
	quorum := len(clients)/2 + 1
	end := startAt + int64(spec.Duration)
	next := relayChannel(spec.Key, (spec.Index+1)%spec.Count)
	heard := map[int]int{}
	done := 0 // the last turn taken: later messages of it (the minority's) are ignored
	var sends sync.WaitGroup
	publish := func(channel, msg string) {
		for _, c := range clients {
			sends.Add(1)
			go func() {
				defer sends.Done()
				pctx, cancel := releaseCtx()
				_ = c.Publish(pctx, channel, msg).Err()
				cancel()
			}()
		}
	}
	defer sends.Wait()
	now, err := monoNow()
	if err != nil {
		return res, err
	}
	if d := time.Duration(startAt - now); d > 0 {
		time.Sleep(d)
	}
	cpu0, wake0 := processUsage()
	defer func() { // the result's, at every return
		cpu1, wake1 := processUsage()
		res.CPU, res.Wakeups = int64(cpu1-cpu0), wake1-wake0
	}()
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
