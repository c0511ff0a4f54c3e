package redlock

// QueuedWaiters exposes how many Acquire calls of c wait for key, so tests can order
// waiters without sleeping.
func QueuedWaiters(c *Client, key string) int { return c.notify.queuedWaiters(key) }

// SetBeforeExtendSend makes every Extend of c call f just before its request goes out,
// so tests can order an extension against a concurrent Release. Set it before use.
func SetBeforeExtendSend(c *Client, f func()) { c.beforeExtendSend = f }

// AcquireQueuedScript is the source of a waiter's attempt (acquireQueuedScript), for tests
// that run a waiter's attempts one master at a time.
func AcquireQueuedScript() string { return acquireQueuedScript.src }

// NewToken is a new lock token.
func NewToken() string { return newToken() }

// TokenTag is how the masters name a token (tokenTag).
func TokenTag(token string) string { return tokenTag(token) }
