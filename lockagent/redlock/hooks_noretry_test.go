package redlock_test

import (
	"context"
	"errors"
	"io"
	"net"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock"
)

// resendingHook is an ordinary application hook: on a connection error it sends the
// command (or pipeline) once more. With honoursNoRetry it first asks the commands
// (Cmder.NoRetry), as the package doc requires of a hook on a Client's go-redis clients;
// without, it is the hook the package doc says must not be used.
type resendingHook struct{ honoursNoRetry bool }

func connectionLost(err error) bool {
	var ne net.Error
	return err != nil && (errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF))
}

func (h *resendingHook) mayResend(cmds ...redis.Cmder) bool {
	if !h.honoursNoRetry {
		return true
	}
	for _, c := range cmds {
		if c.NoRetry() {
			return false
		}
	}
	return true
}

func (h *resendingHook) DialHook(next redis.DialHook) redis.DialHook { return next }

func (h *resendingHook) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		err := next(ctx, cmd)
		if connectionLost(err) && h.mayResend(cmd) {
			err = next(ctx, cmd)
		}
		return err
	}
}

func (h *resendingHook) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		if connectionLost(err) && h.mayResend(cmds...) {
			err = next(ctx, cmds)
		}
		return err
	}
}

// TestReplayedReleaseThroughHook: NoRetry gates go-redis's own retries only; a hook calls
// next as often as it likes. The library cannot see a client's hooks (go-redis lists
// none), so the package doc states the rule: a hook must not call next twice for a command
// whose NoRetry() is true (Open's clients have no user hooks).
//   - A hook that resends on a lost connection but asks NoRetry first: the release goes
//     out once, and Z is refused.
//   - The same hook not asking: it replays the release, and Z acquires while Y holds (two
//     holders): the limit the doc states, shown, so that a change that closes it (or a
//     go-redis that gates hooks) is noticed.
func TestReplayedReleaseThroughHook(t *testing.T) {
	t.Run("a hook that honours NoRetry: sent once", func(t *testing.T) {
		if replayedReleaseThroughGoRedis(t, replayCase{clientRetries: -1, newX: redlock.New, hook: &resendingHook{honoursNoRetry: true}}) {
			t.Error("two holders: a hook that honours NoRetry resent the release")
		}
	})
	t.Run("a hook that ignores NoRetry: two holders (the documented limit)", func(t *testing.T) {
		if !replayedReleaseThroughGoRedis(t, replayCase{clientRetries: -1, newX: redlock.New, hook: &resendingHook{}}) {
			t.Error("Z was refused although the hook resent the release: if hooks are now gated, update the package doc and the lock-library guide")
		}
	})
}
