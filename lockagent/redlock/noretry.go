package redlock

import "github.com/redis/go-redis/v9"

// noRetryCmd is a command go-redis sends at most once, whatever the client's options:
// go-redis v9 asks every command whether it may be sent again (Cmder.NoRetry) before it
// retries it alone, and a pipeline holding one such command is not retried at all. New
// refuses clients built to retry (RetryingClientError), but their Options are live
// (rdb.Options().MaxRetries = 3 after New changes what go-redis does for the next
// command), and a later go-redis default could retry too: the commands say so
// themselves. This gates go-redis's own retry loop only: a hook (redis.Hook) calls next
// as often as it likes, so a hook on a Client's go-redis clients must not call next twice
// for a command whose NoRetry() is true (the package doc; TestReplayedReleaseThroughHook).
// go-redis lists no hooks, so New cannot check; Open's clients carry none of the caller's. The embedded *redis.Cmd reads the reply; the library reads it from there.
type noRetryCmd struct{ *redis.Cmd }

// NoRetry is true: a script that ran and whose reply was lost must not run again (see
// RetryingClientError).
func (noRetryCmd) NoRetry() bool { return true }

// onceOnly wraps cmd for sending, unless the master's commands were made retryable for a
// test's negative control (retryableCommands).
func (m *master) onceOnly(cmd *redis.Cmd) redis.Cmder {
	if m.retryableCommands.Load() {
		return cmd
	}
	return noRetryCmd{cmd}
}
