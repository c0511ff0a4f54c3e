package redlock

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Sentinel errors. Every error the package returns can be inspected with errors.Is and,
// for the struct types, errors.As. Context errors of the caller pass through unchanged
// (errors.Is(err, context.Canceled) works on an Acquire that was cancelled).
var (
	// ErrTaken: another client holds the lock on enough masters that no majority is possible.
	// *TakenError matches it.
	ErrTaken = errors.New("redlock: lock is held by another client")
	// ErrUnavailable: a majority could not be reached because masters failed or timed out.
	// *UnavailableError matches it.
	ErrUnavailable = errors.New("redlock: not enough masters answered")
	// ErrLost: the lock is no longer ours on enough masters (it expired and somebody else
	// took it, or it was deleted).
	ErrLost = errors.New("redlock: lock lost")
	// ErrExpired: the lock's validity ran out (before a release or extension could be
	// confirmed, or before an acquisition completed).
	ErrExpired = errors.New("redlock: lock validity expired")
	// ErrTTLTooLong: the requested TTL is above Options.MaxTTL.
	ErrTTLTooLong = errors.New("redlock: ttl above the maximum")
	// ErrExtensionLimit: the lock was already extended Options.MaxExtensions times.
	ErrExtensionLimit = errors.New("redlock: extension limit reached")
	// ErrReleased: the lock handle was already released.
	ErrReleased = errors.New("redlock: lock already released")
	// ErrClosed: the Client was closed.
	ErrClosed = errors.New("redlock: client closed")
	// ErrNodeTimeout: one master did not answer within the per-node timeout (found inside
	// *UnavailableError, never returned alone).
	ErrNodeTimeout = errors.New("master did not answer within the node timeout")
	// ErrDenied: a master refused the credentials or the command (WRONGPASS, NOPERM,
	// NOAUTH): retrying cannot help; fix the user, password or ACL.
	ErrDenied = errors.New("redlock: access denied by the masters")
	// ErrInvalid: a bad argument (empty key, ttl <= 0, ...); the message names the fix.
	ErrInvalid = errors.New("redlock: invalid argument")
)

// MasterError is one master's failure.
type MasterError struct {
	Master int    // index in the masters slice given to New
	Addr   string // address when known
	Err    error
}

func (e MasterError) Error() string {
	return fmt.Sprintf("master %d (%s): %v", e.Master, e.Addr, e.Err)
}

func (e MasterError) Unwrap() error { return e.Err }

// TakenError reports an attempt refused because the key is held by someone else on
// enough masters that no majority was possible.
type TakenError struct {
	Key     string
	Refused []int // indexes of the masters where the key was held by another token
	Votes   int   // masters that granted us the key (released again)
	Quorum  int
	// FreeIn estimates when a majority of masters will have the key free (from PTTL
	// replies); 0 when unknown.
	FreeIn time.Duration
}

func (e *TakenError) Error() string {
	return fmt.Sprintf("redlock: %q is held by another client (refused by masters %v; %d/%d votes)",
		e.Key, e.Refused, e.Votes, e.Quorum)
}

// Is makes errors.Is(err, ErrTaken) true.
func (e *TakenError) Is(target error) bool { return target == ErrTaken }

// UnavailableError reports an operation that could not reach a majority because masters
// failed or timed out (rather than refused).
type UnavailableError struct {
	Op     string // "acquire", "fence", "extend", "release"
	Key    string
	Votes  int // masters that confirmed
	Quorum int
	Errors []MasterError
}

func (e *UnavailableError) Error() string {
	parts := make([]string, len(e.Errors))
	for i, me := range e.Errors {
		parts[i] = me.Error()
	}
	return fmt.Sprintf("redlock: %s %q: %d/%d masters confirmed, need %d: %s",
		e.Op, e.Key, e.Votes, e.Votes+len(e.Errors), e.Quorum, strings.Join(parts, "; "))
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

// Unwrap exposes the per-master errors to errors.Is/As.
func (e *UnavailableError) Unwrap() []error {
	errs := make([]error, len(e.Errors))
	for i, me := range e.Errors {
		errs[i] = me
	}
	return errs
}
