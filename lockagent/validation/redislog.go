package validation

import (
	"context"
	"errors"
	"fmt"
	"log"
	"net"
	"os"
	"sync"

	"github.com/redis/go-redis/v9"
)

// go-redis logs through one process-wide logger (redis.SetLogger): v9.23 has no per-client
// logger, and it logs a failed dial from its own goroutine with a background context, so
// neither the client nor the context says whose dial it was. When masters are down that is
// a line per failed dial ("connection pool: failed to dial after 1 attempts: <error>"),
// hundreds per run. What it does pass is the dial's error: the helpers that take a TestingT
// (Validate*, ValidateStrict*, CheckCatalogue) dial through a wrapper whose errors name the
// test (routedDialError), and the logger they install once sends a line carrying such an
// error to that test's log; any other line goes to stderr, as go-redis's own logger would.
// Run, the plain entry point, leaves go-redis's logger alone: it is the caller's (lockagent
// routes it to its --log-level). A logger the test process sets itself (redis.SetLogger)
// after the first helper call replaces this one; set before, it is replaced (go-redis does
// not expose the current logger to chain to).

var installRedisLogger sync.Once

// redisLogSink is the test log of one helper call; closed when the call returns, so that a
// late line never reaches a test that has finished.
type redisLogSink struct {
	mu     sync.Mutex
	t      TestingT
	closed bool
}

// routedDialError is a dial error of a helper's run: the error itself (its text, and what
// errors.Is/As find), plus where go-redis's line about it goes.
type routedDialError struct {
	error
	sink *redisLogSink
}

func (e routedDialError) Unwrap() error { return e.error }

// testLogs returns dialer (nil: a plain net.Dialer) wrapped so that go-redis's lines about
// its failed dials go to t's log, and the function that ends that (call it before the helper
// returns).
func testLogs(t TestingT, dialer func(ctx context.Context, network, addr string) (net.Conn, error)) (func(ctx context.Context, network, addr string) (net.Conn, error), func()) {
	installRedisLogger.Do(func() {
		redis.SetLogger(routedRedisLogger{fallback: log.New(os.Stderr, "redis: ", log.LstdFlags)})
	})
	if dialer == nil {
		var d net.Dialer
		dialer = d.DialContext
	}
	sink := &redisLogSink{t: t}
	routed := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dialer(ctx, network, addr)
		if err != nil {
			return nil, routedDialError{err, sink}
		}
		return c, nil
	}
	return routed, func() {
		sink.mu.Lock()
		sink.closed = true
		sink.mu.Unlock()
	}
}

// routedRedisLogger sends a line about a routed dial error to its test's log, any other
// line to fallback.
type routedRedisLogger struct{ fallback *log.Logger }

func (l routedRedisLogger) Printf(_ context.Context, format string, v ...any) {
	for _, a := range v {
		var routed routedDialError
		if err, ok := a.(error); ok && errors.As(err, &routed) {
			sink := routed.sink
			sink.mu.Lock()
			defer sink.mu.Unlock()
			if !sink.closed {
				sink.t.Logf("go-redis: %s", fmt.Sprintf(format, v...))
				return
			}
			break
		}
	}
	l.fallback.Printf(format, v...)
}
