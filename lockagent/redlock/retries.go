package redlock

import (
	"fmt"

	"github.com/redis/go-redis/v9"
)

// RetryingClientError reports a master's client that may send a command again after its
// reply was lost (a connection error): New refuses it. go-redis does so unless the client
// is built with MaxRetries -1; its default (0) means 3 retries. A script that ran and
// whose reply was lost must not run again: a release replayed on a master that crashed
// after running it and restarted at once deletes the releaser's key that the restart
// brought back, and that key was what kept an unlogged hand-off's new holder safe there,
// so a third client can then hold beside it (see "The protocol's invariants and fault
// model" in the package doc). New refuses, with the same error, a client that is not one
// independent master (Sentinel failover, Cluster, Ring). It matches ErrInvalid.
type RetryingClientError struct {
	Master  int    // index in the masters slice given to New
	Addr    string // the client's address ("master-<i>" when it has none)
	Client  string // the client's Go type
	Retries int    // the retries its options allow (-1: unknown)
	Reason  string // what is wrong and the fix
}

func (e *RetryingClientError) Error() string {
	return fmt.Sprintf("redlock: master %d (%s): %s", e.Master, e.Addr, e.Reason)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *RetryingClientError) Is(target error) bool { return target == ErrInvalid }

// whyNoRetries is the reason given with every refusal.
const whyNoRetries = "go-redis then sends a command again when its reply was lost, and a release run twice, " +
	"around a crash and immediate restart of its master, frees a key an unlogged hand-off gave to the next waiter (two holders)"

// sentinelFailoverAddr is the Addr go-redis v9 puts in the Options of the *redis.Client
// that NewFailoverClient (and NewUniversalClient with MasterName) returns: the only mark
// that tells it from a client of one server.
const sentinelFailoverAddr = "FailoverClient"

// refuseRetryingClients returns a *RetryingClientError for the first master whose client
// may resend a command or is not one independent master, nil when none. Only a
// *redis.Client can be checked (its Options, as go-redis normalised them: -1 became 0, 0
// became 3); a Sentinel failover, Cluster or Ring client is not one independent master,
// and a client of another type cannot be checked.
func refuseRetryingClients(masters []redis.UniversalClient) error {
	for i, rdb := range masters {
		e := &RetryingClientError{Master: i, Addr: addrOf(rdb, i), Client: fmt.Sprintf("%T", rdb), Retries: -1}
		switch cl := rdb.(type) {
		case *redis.Client:
			e.Retries = cl.Options().MaxRetries
			if cl.Options().Addr == sentinelFailoverAddr {
				e.Reason = "a Sentinel failover client (redis.NewFailoverClient, or redis.NewUniversalClient with " +
					"MasterName) is not one independent master: Sentinel promotes a replica that lacks the writes not " +
					"yet replicated (held keys, raised fence registers), which hands a lock to a second client and a " +
					"fence below one already given: pass one *redis.Client (redis.NewClient) per independent master, " +
					"built with MaxRetries: -1"
				break
			}
			if e.Retries <= 0 {
				continue
			}
			given := fmt.Sprintf("is %d (%d retries)", e.Retries, e.Retries)
			if e.Retries == 3 {
				given = "is 0 or 3 (3 retries; 0 is the go-redis default, and what a copy of a client's Options() holds for -1)"
			}
			e.Reason = fmt.Sprintf("go-redis Options.MaxRetries %s: set MaxRetries: -1; %s", given, whyNoRetries)
		case *redis.ClusterClient:
			e.Reason = "a *redis.ClusterClient is a Redis Cluster, not one independent master (its failover can hand a " +
				"lock to a second client), and it resends commands (MaxRedirects): pass one *redis.Client per " +
				"independent master, built with MaxRetries: -1"
		case *redis.Ring:
			e.Reason = "a *redis.Ring spreads keys over several servers, not one independent master, and it resends " +
				"commands (MaxRetries): pass one *redis.Client per independent master, built with MaxRetries: -1"
		default:
			e.Reason = fmt.Sprintf("a %s is not a *redis.Client, so redlock cannot tell whether it sends a command "+
				"again after its reply was lost: pass a *redis.Client built with MaxRetries: -1", e.Client)
		}
		return e
	}
	return nil
}
