package audit

import (
	"context"
	"math"
	"time"

	"github.com/redis/go-redis/v9"
)

// ClockSample is one TIME round trip: the caller's clock when the request left and when
// the reply arrived (time.Now values, so they carry the monotonic reading), and the
// master's wall clock from the reply.
type ClockSample struct {
	Sent, Received time.Time
	Server         time.Time
}

// RTT is the round trip of the sample.
func (s ClockSample) RTT() time.Duration { return s.Received.Sub(s.Sent) }

// mid is the caller's best guess of when the master read its clock: halfway through.
func (s ClockSample) mid() time.Time { return s.Sent.Add(s.RTT() / 2) }

// Offset is the master's wall clock minus the caller's wall clock at the midpoint of the
// round trip; the true offset is within ±RTT/2 of it.
func (s ClockSample) Offset() time.Duration {
	// Server has no monotonic reading, so Sub compares wall clocks, which is what we want.
	return s.Server.Sub(s.mid())
}

// ClockRate compares how far the master's wall clock advanced between two samples with how
// far the caller's monotonic clock advanced: 1 means the same rate, 1.02 a master clock
// running 2% fast (or stepped forward in between). errBound is the largest error the
// round trips can explain, so a rate outside 1±(drift+errBound) is a real difference.
func ClockRate(first, second ClockSample) (rate, errBound float64) {
	local := second.mid().Sub(first.mid()) // both carry monotonic readings
	if local <= 0 {
		return math.NaN(), math.Inf(1)
	}
	server := second.Server.Sub(first.Server)
	// Each midpoint is uncertain by half its round trip; TIME has microsecond resolution.
	uncertainty := first.RTT()/2 + second.RTT()/2 + 2*time.Microsecond
	return float64(server) / float64(local), float64(uncertainty) / float64(local)
}

// measureClock takes the best (shortest round trip) of a few TIME samples, waits interval,
// takes another best sample, and returns the offset from the first and the rate between them.
func measureClock(ctx context.Context, c *redis.Client, timeout, interval time.Duration) (offset time.Duration, rate, rateErr float64, err error) {
	first, err := bestSample(ctx, c, timeout)
	if err != nil {
		return 0, 0, 0, err
	}
	select {
	case <-time.After(interval):
	case <-ctx.Done():
		return 0, 0, 0, ctx.Err()
	}
	second, err := bestSample(ctx, c, timeout)
	if err != nil {
		return 0, 0, 0, err
	}
	rate, rateErr = ClockRate(first, second)
	return first.Offset(), rate, rateErr, nil
}

const samplesPerMeasurement = 3

func bestSample(ctx context.Context, c *redis.Client, timeout time.Duration) (ClockSample, error) {
	var best ClockSample
	for i := 0; i < samplesPerMeasurement; i++ {
		s, err := nodeCall(ctx, timeout, func(ctx context.Context) (ClockSample, error) {
			sent := time.Now()
			srv, err := c.Time(ctx).Result()
			return ClockSample{Sent: sent, Received: time.Now(), Server: srv}, err
		})
		if err != nil {
			return ClockSample{}, err
		}
		if i == 0 || s.RTT() < best.RTT() {
			best = s
		}
	}
	return best, nil
}
