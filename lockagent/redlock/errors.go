package redlock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/lockagent/redlock/lua"
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
	// NOAUTH): retrying cannot help; fix the user, password or ACL. A *DeniedError (found
	// inside *UnavailableError, one per refusing master) matches it and carries the
	// server's message. Acquire returns it at once when the denying masters leave no
	// majority; denied by fewer, the attempt is retried like one with a master down.
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

// DeniedError is one master's refusal of the credentials or of a command (WRONGPASS,
// NOAUTH, NOPERM). Its text is the server's message; it matches ErrDenied, and unwraps to
// the go-redis error.
type DeniedError struct {
	Err error // the server's reply, as go-redis returned it
}

func (e *DeniedError) Error() string {
	msg := e.Err.Error()
	if redis.HasErrorPrefix(e.Err, "NOPERM") && (strings.Contains(msg, "key") || strings.Contains(msg, "channel")) {
		// A lock user of a deployment with several applications may only touch the keys and
		// channels under its prefix: a Client without it is refused on every lock.
		return "access denied: " + msg + " (a lock user may only use the keys under its key_prefix: the Client needs it as " +
			"Options.KeyPrefix; redlock.Open takes it from the client file's key_prefix)"
	}
	return "access denied: " + msg
}

// Is makes errors.Is(err, ErrDenied) true.
func (e *DeniedError) Is(target error) bool { return target == ErrDenied }

func (e *DeniedError) Unwrap() error { return e.Err }

// isDenial reports whether err is a server's refusal of the credentials or a command.
func isDenial(err error) bool {
	if err == nil {
		return false
	}
	if redis.IsAuthError(err) || redis.IsPermissionError(err) {
		return true
	}
	for _, p := range []string{"WRONGPASS", "NOAUTH", "NOPERM"} {
		if redis.HasErrorPrefix(err, p) {
			return true
		}
	}
	return false
}

// connError is a connection-level failure named by its cause ("connection refused",
// "connection reset", ...). It unwraps to the network error, so errors.Is(err,
// syscall.ECONNREFUSED) works; it matches ErrNodeTimeout only when it was a timeout.
type connError struct {
	cause   string
	timeout bool
	err     error
}

func (e *connError) Error() string {
	if strings.Contains(e.err.Error(), e.cause) {
		return e.cause + " (" + e.err.Error() + ")"
	}
	return e.cause + ": " + e.err.Error()
}

func (e *connError) Unwrap() error { return e.err }

func (e *connError) Is(target error) bool { return e.timeout && target == ErrNodeTimeout }

// describe names the cause of one master's failure: a denial becomes a *DeniedError, a
// network failure says what happened (refused, reset, timed out, closed). Anything
// else, and errors already described, pass through.
func describe(err error) error {
	var de *DeniedError
	var ce *connError
	switch {
	case err == nil || errors.As(err, &de) || errors.As(err, &ce) || errors.Is(err, ErrNodeTimeout) || errors.Is(err, ErrClosed):
		return err
	case isDenial(err):
		return &DeniedError{Err: err}
	case errors.Is(err, syscall.ECONNREFUSED):
		return &connError{cause: "connection refused", err: err}
	case errors.Is(err, syscall.ECONNRESET):
		return &connError{cause: "connection reset", err: err}
	case errors.Is(err, syscall.EPIPE):
		return &connError{cause: "connection broken", err: err}
	case errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH):
		return &connError{cause: "unreachable", err: err}
	case errors.Is(err, os.ErrDeadlineExceeded) || isNetTimeout(err):
		return &connError{cause: "timed out", timeout: true, err: err}
	case errors.Is(err, context.DeadlineExceeded):
		return &connError{cause: "timed out (pipeline bound)", timeout: true, err: err}
	case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed):
		return &connError{cause: "connection closed", err: err}
	}
	return err
}

func isNetTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// TakenError reports an attempt refused because the key is held by someone else on
// enough masters that no majority was possible.
type TakenError struct {
	Key     string
	Refused []int // indexes of the masters where the key was held by another token
	Votes   int   // masters that granted us the key (released again)
	Quorum  int
	// FreeIn estimates when a majority of masters will have the key free (from PTTL
	// replies: the holder's TTL, which its renewals push back); 0 when unknown.
	FreeIn time.Duration
}

func (e *TakenError) Error() string {
	return fmt.Sprintf("redlock: %q is held by another client (refused by masters %v; %d votes, need %d)",
		e.Key, e.Refused, e.Votes, e.Quorum)
}

// Is makes errors.Is(err, ErrTaken) true.
func (e *TakenError) Is(target error) bool { return target == ErrTaken }

// UnavailableError reports an operation that could not reach a majority because masters
// failed or timed out (rather than refused).
//
// Every master asked is counted once: Votes + Refused + len(Errors) == Masters.
type UnavailableError struct {
	Op      string // "acquire", "fence", "extend", "release"
	Key     string
	Votes   int // masters that confirmed
	Refused int // masters that answered no (the key held by another token)
	Masters int // masters asked (N)
	Quorum  int
	Errors  []MasterError // one per master that failed (timeouts, connection errors, denials, ...)
}

func (e *UnavailableError) Error() string {
	total := e.Masters
	if total == 0 {
		total = e.Votes + e.Refused + len(e.Errors)
	}
	refused := ""
	if e.Refused > 0 {
		refused = fmt.Sprintf(", %d held by another client", e.Refused)
	}
	denied := ""
	if errors.Is(e, ErrDenied) {
		denied = " (access denied: fix the user, password or ACL)"
	}
	return fmt.Sprintf("redlock: %s %q: %d/%d masters confirmed, need %d%s%s: %s",
		e.Op, e.Key, e.Votes, total, e.Quorum, refused, denied, collapseMasterErrors(e.Errors, total))
}

// collapseMasterErrors writes the masters' failures once per distinct message, in the
// masters' order: "master 2 (addr): msg" for one master, "3 of 5 masters (addr, addr,
// addr): msg" for several (a wrong password refused by every master reads once, not five
// times).
func collapseMasterErrors(errs []MasterError, total int) string {
	errs = slices.Clone(errs)
	slices.SortStableFunc(errs, func(a, b MasterError) int { return a.Master - b.Master })
	type group struct {
		msg   string
		first MasterError
		names []string
	}
	var groups []*group
	byMsg := map[string]*group{}
	for _, me := range errs {
		msg := fmt.Sprint(me.Err)
		g := byMsg[msg]
		if g == nil {
			g = &group{msg: msg, first: me}
			byMsg[msg] = g
			groups = append(groups, g)
		}
		name := me.Addr
		if name == "" {
			name = fmt.Sprintf("master %d", me.Master)
		}
		g.names = append(g.names, name)
	}
	parts := make([]string, len(groups))
	for i, g := range groups {
		if len(g.names) == 1 {
			parts[i] = g.first.Error()
			continue
		}
		parts[i] = fmt.Sprintf("%d of %d masters (%s): %s", len(g.names), total, strings.Join(g.names, ", "), g.msg)
	}
	return strings.Join(parts, "; ")
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

// ForeignQueueError reports a lock whose wait-queue key (the lock's key + QueueSuffix, or
// one of its pages, + ":<n>") holds a value that is not a wait queue on a master: another
// application uses that name.
// The library never reads such a value as a queue nor overwrites it; Acquire returns this
// error (it matches ErrInvalid) instead of waiting in a queue it cannot keep. Fix: rename
// the other application's key or lock another name.
type ForeignQueueError struct {
	Key    string // the wait-queue key (or page) that holds it
	Master int    // index of the master that refused
}

func (e *ForeignQueueError) Error() string {
	return fmt.Sprintf("redlock: %q on master %d holds a value that is not a wait queue (another application's key?): "+
		"rename that key or lock another name; the library never overwrites it", e.Key, e.Master)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *ForeignQueueError) Is(target error) bool { return target == ErrInvalid }

// asForeignQueue returns the *ForeignQueueError for an error reply that starts with
// lua.ForeignQueueCode (acquire_queued on a queue key, or a page of it, that holds
// something else: the reply names it), else nil. key is the queue key.
func asForeignQueue(err error, key string, master int) *ForeignQueueError {
	var re redis.Error
	if errors.As(err, &re) && strings.HasPrefix(re.Error(), lua.ForeignQueueCode) {
		if f := strings.Fields(re.Error()); len(f) > 1 && strings.HasPrefix(f[1], key+":") {
			key = f[1]
		}
		return &ForeignQueueError{Key: key, Master: master}
	}
	return nil
}

// unavailable builds the error for a round that got too few confirmations. Every master
// is counted once: votes, refusals, then one error per master (errs, plus a node
// timeout, or the connection error its last pipeline ended with, for every master that
// did not answer in time).
func (c *Client) unavailable(op Op, key string, votes, refused int, errs []MasterError, rd *round) error {
	seen := make([]bool, len(c.masters))
	out := make([]MasterError, 0, len(c.masters))
	for _, me := range errs {
		if me.Master >= 0 && me.Master < len(seen) {
			if seen[me.Master] {
				continue
			}
			seen[me.Master] = true
		}
		me.Err = describe(me.Err)
		out = append(out, me)
	}
	for i := range rd.reqs {
		if rd.reqs[i].seen || seen[i] {
			continue
		}
		var err error = ErrNodeTimeout
		if f := c.masters[i].recentFailure(2 * c.opts.CleanupTimeout); f != nil {
			err = &unansweredError{last: f}
		}
		out = append(out, MasterError{Master: i, Addr: c.masters[i].addr, Err: err})
	}
	return &UnavailableError{Op: string(op), Key: key, Votes: votes, Refused: refused, Masters: len(c.masters), Quorum: c.quorum, Errors: out}
}

// unansweredError is a master that did not answer within the node timeout while its
// previous pipeline had failed with a connection error (go-redis retries a refused dial
// for longer than a node timeout): that error is the cause. It matches ErrNodeTimeout
// only when that error was a timeout.
type unansweredError struct{ last error }

func (e *unansweredError) Error() string {
	return e.last.Error() + " (still failing: no reply within the node timeout)"
}

func (e *unansweredError) Unwrap() error { return e.last }

// masterError is one master's failure in a round, with its cause named (describe).
func masterError(req *request, err error) MasterError {
	return MasterError{Master: req.master.index, Addr: req.master.addr, Err: describe(err)}
}

// MasterCountError reports a number of masters Redlock cannot use: New refuses fewer than
// three or an even number. It matches ErrInvalid.
type MasterCountError struct {
	Masters int // how many were given
}

func (e *MasterCountError) Error() string {
	fix := fmt.Sprintf("pass one client per independent master, %d or %d (5 is the reference)", e.Masters-1, e.Masters+1)
	switch {
	case e.Masters < 3:
		fix = "pass one client per independent master, at least 3 (5 is the reference: it tolerates two failures)"
	case e.Masters%2 == 0:
		fix = fmt.Sprintf("a majority of %d tolerates no more failures than %d masters would: pass %d or %d independent masters",
			e.Masters, e.Masters-1, e.Masters-1, e.Masters+1)
	}
	return fmt.Sprintf("redlock: %d masters given; Redlock needs an odd number >= 3: %s", e.Masters, fix)
}

// Is makes errors.Is(err, ErrInvalid) true.
func (e *MasterCountError) Is(target error) bool { return target == ErrInvalid }
