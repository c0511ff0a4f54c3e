// Package redlockprom exports what a redlock.Client does as Prometheus metrics: pass a
// *Metrics as redlock.Options.Hooks.
//
//	m, err := redlockprom.New(prometheus.DefaultRegisterer)
//	client, err := redlock.New(masters, redlock.Options{Hooks: m})
//
// Metrics (result is ok, taken, unavailable, denied, lost, expired, canceled, invalid,
// closed or error; master is the master's address, or its index when unknown):
//
//	redlock_operations_total{op,result}              acquire, extend, release calls
//	redlock_operation_duration_seconds{op,result}    their duration
//	redlock_acquire_attempts                         attempts per acquisition
//	redlock_acquired_validity_seconds                validity left when a lock was granted
//	redlock_master_replies_total{op,master,result}   per master: vote, refused, timeout, error
//	redlock_master_reply_duration_seconds{op,master} per master round trip
//
// A *Metrics is safe for concurrent use and may serve several Clients.
package redlockprom

import (
	"context"
	"errors"
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// Metrics implements redlock.Hooks.
type Metrics struct {
	operations     *prometheus.CounterVec
	opDuration     *prometheus.HistogramVec
	attempts       prometheus.Histogram
	validity       prometheus.Histogram
	replies        *prometheus.CounterVec
	replyDurations *prometheus.HistogramVec
}

var _ redlock.Hooks = (*Metrics)(nil)

// New creates the metrics and registers them with reg (prometheus.DefaultRegisterer, or
// a prometheus.NewRegistry()); it fails when they are already registered there.
func New(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{
		operations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redlock_operations_total", Help: "Redlock calls (acquire, extend, release), by result.",
		}, []string{"op", "result"}),
		opDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "redlock_operation_duration_seconds", Help: "Duration of Redlock calls, waiting included.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 18), // 0.5 ms .. ~65 s
		}, []string{"op", "result"}),
		attempts: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "redlock_acquire_attempts", Help: "Attempts one acquisition took.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 12),
		}),
		validity: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "redlock_acquired_validity_seconds", Help: "Validity left when a lock was granted (TTL minus elapsed and drift).",
			Buckets: prometheus.ExponentialBuckets(0.01, 2, 16),
		}),
		replies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "redlock_master_replies_total", Help: "Masters' answers in Redlock rounds: vote, refused, timeout or error.",
		}, []string{"op", "master", "result"}),
		replyDurations: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "redlock_master_reply_duration_seconds", Help: "Round trip to one master in a Redlock round.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 16), // 0.1 ms .. ~3 s
		}, []string{"op", "master"}),
	}
	for _, c := range []prometheus.Collector{m.operations, m.opDuration, m.attempts, m.validity, m.replies, m.replyDurations} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// Operation implements redlock.Hooks.
func (m *Metrics) Operation(e redlock.OperationEvent) {
	result := Result(e.Err)
	m.operations.WithLabelValues(string(e.Op), result).Inc()
	m.opDuration.WithLabelValues(string(e.Op), result).Observe(e.Elapsed.Seconds())
	if e.Op == redlock.OpAcquire {
		m.attempts.Observe(float64(e.Attempts))
		if e.Err == nil {
			m.validity.Observe(e.Validity.Seconds())
		}
	}
}

// MasterReply implements redlock.Hooks.
func (m *Metrics) MasterReply(e redlock.MasterEvent) {
	master := e.Addr
	if master == "" {
		master = strconv.Itoa(e.Master)
	}
	result := "refused"
	switch {
	case e.Err != nil && errors.Is(e.Err, redlock.ErrNodeTimeout):
		result = "timeout"
	case e.Err != nil:
		result = "error"
	case e.Vote:
		result = "vote"
	}
	m.replies.WithLabelValues(string(e.Op), master, result).Inc()
	m.replyDurations.WithLabelValues(string(e.Op), master).Observe(e.Latency.Seconds())
}

// Result names an operation's outcome as the result label does.
func Result(err error) string {
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, redlock.ErrTaken):
		return "taken"
	case errors.Is(err, redlock.ErrDenied):
		return "denied"
	case errors.Is(err, redlock.ErrUnavailable):
		return "unavailable"
	case errors.Is(err, redlock.ErrLost):
		return "lost"
	case errors.Is(err, redlock.ErrExpired):
		return "expired"
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return "canceled"
	case errors.Is(err, redlock.ErrInvalid), errors.Is(err, redlock.ErrTTLTooLong):
		return "invalid"
	case errors.Is(err, redlock.ErrClosed):
		return "closed"
	}
	return "error"
}
