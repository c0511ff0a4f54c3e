package redlock

// QueuedWaiters exposes how many Acquire calls of c wait for key, so tests can order
// waiters without sleeping.
func QueuedWaiters(c *Client, key string) int { return c.notify.queuedWaiters(key) }
