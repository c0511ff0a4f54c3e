package redlock

import (
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
)

// MasterOptions returns the go-redis options for one master's client at addr, the only
// set that is safe and quiet with this package; set Username, Password and (with TLS)
// TLSConfig on it, then redis.NewClient. Open and NewFromConfig build their clients with it.
//
//   - MaxRetries -1: go-redis never sends a command again after its reply was lost (New
//     refuses a client that may; see RetryingClientError). The library retries whole
//     attempts itself, and marks its own commands as not retryable either way.
//   - ContextTimeoutEnabled: a stuck master's connection is dropped at the library's
//     deadline instead of go-redis's read timeout.
//   - DialerRetries 1: one dial per attempt; go-redis would otherwise retry a refused dial
//     for longer than a node timeout, and the refusal would show as a timeout.
//   - DisableIdentity, and maintenance notifications off: the connection handshake then
//     sends only HELLO/AUTH. CLIENT SETINFO and CLIENT MAINT_NOTIFICATIONS are commands
//     the kit's lock users may not run: each connection would leave an error on the server
//     (errorstat_ERR, errorstat_NOPERM in INFO errorstats), which monitoring counts.
//   - DialTimeout 2 s: a master that does not answer a dial is down for this attempt.
func MasterOptions(addr string) *redis.Options {
	return &redis.Options{
		Addr:                     addr,
		MaxRetries:               -1,
		ContextTimeoutEnabled:    true,
		DialerRetries:            1,
		DialTimeout:              2 * time.Second,
		DisableIdentity:          true,
		MaintNotificationsConfig: &maintnotifications.Config{Mode: maintnotifications.ModeDisabled},
	}
}
