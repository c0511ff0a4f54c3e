package acl

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/pki"
)

// Target is how the admin reaches the masters.
type Target struct {
	Username string // the admin user; "" is "default"
	Password string
	// TLS is the client side of a TLS deployment (internal/pki.ClientConfig; the server
	// name is taken from each endpoint); nil talks plain text.
	TLS *tls.Config
	// Timeout bounds each dial and each reply; 5s when zero.
	Timeout time.Duration
	// Dialer, when set, opens the connections (a tunnel, a network namespace); TLS is run
	// over it (pki.WrapDialer).
	Dialer pki.Dialer
	// PreviousPassword is tried when a master refuses Password: during an admin password
	// rotation the masters accept only the previous one until the change reaches them.
	PreviousPassword string
}

// Change is what Apply makes a master's users: Users defined, Remove deleted, and the admin
// (default) user accepting the passwords of AdminAccept and no longer those of
// AdminRetire (SHA-256 hashes; its other passwords, such as the host's own, are kept).
type Change struct {
	Users       []User
	Remove      []string
	AdminAccept []string
	AdminRetire []string
	// Guard, when set, runs on the connection that then makes the change, before it, and
	// refuses the change on that master with its error: the change is made on that one
	// connection, so a master that restarts after the guard fails the change instead of
	// taking it on the new server unguarded (fenceseed.LetInGuard).
	Guard func(ctx context.Context, c redis.Cmdable) error
}

// adminConn is a connection logged in as the admin: a client, or one pinned connection.
type adminConn interface {
	redis.Cmdable
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// EndpointError is a failure on one master, named by its endpoint.
type EndpointError struct {
	Endpoint string
	Err      error
}

func (e *EndpointError) Error() string { return e.Endpoint + ": " + e.Err.Error() }
func (e *EndpointError) Unwrap() error { return e.Err }

// ErrNoACLFile is returned by Apply for a master that loads no ACL file: a user changed
// there would be gone after its next restart.
var ErrNoACLFile = errors.New("the server has no aclfile, so users changed live would be lost at its next restart: " +
	"render the master with an ACL file (modules/redlock-hosts and redlock_host_config do) and restart it once")

// connect returns a client of endpoint that logged in as the admin: with Password, or,
// where that is refused, with PreviousPassword.
func (t Target) connect(ctx context.Context, endpoint string) (*redis.Client, error) {
	c := t.client(endpoint, t.Password)
	err := c.Ping(ctx).Err()
	if err != nil && t.PreviousPassword != "" && strings.Contains(err.Error(), "WRONGPASS") {
		_ = c.Close()
		c = t.client(endpoint, t.PreviousPassword)
		err = c.Ping(ctx).Err()
	}
	if err != nil {
		_ = c.Close()
		return nil, fmt.Errorf("log in as the admin: %w", err)
	}
	return c, nil
}

// Connect is connect for other work done as the admin on endpoint (seeding its fence
// registers: internal/fenceseed); the caller closes the client.
func (t Target) Connect(ctx context.Context, endpoint string) (*redis.Client, error) {
	c, err := t.connect(ctx, endpoint)
	if err != nil {
		return nil, &EndpointError{Endpoint: endpoint, Err: err}
	}
	return c, nil
}

func (t Target) client(endpoint, password string) *redis.Client {
	timeout := t.Timeout
	if timeout == 0 {
		timeout = 5 * time.Second
	}
	o := &redis.Options{
		Addr: endpoint, Username: t.Username, Password: password, TLSConfig: t.TLS, Protocol: 2,
		DialTimeout: timeout, ReadTimeout: timeout, WriteTimeout: timeout, MaxRetries: -1,
		DisableIdentity: true, PoolSize: 1,
	}
	if t.Dialer != nil {
		o.Dialer = t.Dialer
		if t.TLS != nil {
			o.Dialer = pki.WrapDialer(t.Dialer, t.TLS)
		}
	}
	return redis.NewClient(o)
}

// Read returns the live definition of each named user on endpoint; a user the master does
// not have is not in the map.
func (t Target) Read(ctx context.Context, endpoint string, names []string) (map[string]Definition, error) {
	c, err := t.connect(ctx, endpoint)
	if err != nil {
		return nil, &EndpointError{Endpoint: endpoint, Err: err}
	}
	defer c.Close()
	out, err := read(ctx, c, names)
	if err != nil {
		return nil, &EndpointError{Endpoint: endpoint, Err: err}
	}
	return out, nil
}

func read(ctx context.Context, c adminConn, names []string) (map[string]Definition, error) {
	out := map[string]Definition{}
	for _, name := range names {
		reply, err := c.Do(ctx, "ACL", "GETUSER", name).Result()
		if errors.Is(err, redis.Nil) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("ACL GETUSER %s: %w", name, err)
		}
		d, found, err := parseGetUser(reply)
		if err != nil {
			return nil, err
		}
		if found {
			out[name] = d
		}
	}
	return out, nil
}

// Apply makes endpoint's users match: each of users is (re)defined where its live
// definition differs, each of remove is deleted (ACL DELUSER, which disconnects its
// clients), then ACL SAVE writes the ACL file. Nothing changes on a master without an
// ACL file (ErrNoACLFile). A user set twice, or a removal of a missing user, is a no-op.
func (t Target) Apply(ctx context.Context, endpoint string, users []User, remove []string) error {
	return t.ApplyChange(ctx, endpoint, Change{Users: users, Remove: remove})
}

// ApplyChange is Apply with the admin's passwords too (Change).
func (t Target) ApplyChange(ctx context.Context, endpoint string, change Change) error {
	c, err := t.connect(ctx, endpoint)
	if err == nil {
		defer c.Close()
		// One connection: it does not reconnect, so every command reaches the server the
		// guard checked, or the change fails.
		conn := c.Conn()
		defer conn.Close()
		if change.Guard != nil {
			err = change.Guard(ctx, conn)
		}
		if err == nil {
			err = apply(ctx, conn, change)
		}
	}
	if err != nil {
		return &EndpointError{Endpoint: endpoint, Err: err}
	}
	return nil
}

func apply(ctx context.Context, c adminConn, change Change) error {
	users, remove := change.Users, change.Remove
	for _, h := range append(append([]string{}, change.AdminAccept...), change.AdminRetire...) {
		if !ValidHash(h) {
			return fmt.Errorf("admin password hash %q is not a lower-case hex SHA-256", h)
		}
	}
	for _, u := range users {
		if err := u.Check(); err != nil {
			return err
		}
	}
	file, err := c.ConfigGet(ctx, "aclfile").Result()
	if err != nil {
		return fmt.Errorf("CONFIG GET aclfile: %w", err)
	}
	if file["aclfile"] == "" {
		return ErrNoACLFile
	}
	names := make([]string, len(users))
	for i, u := range users {
		names[i] = u.Name
	}
	live, err := read(ctx, c, names)
	if err != nil {
		return err
	}
	for _, u := range users {
		if d, ok := live[u.Name]; ok && u.Matches(d) {
			continue
		}
		args := []any{"ACL", "SETUSER", u.Name}
		for _, r := range u.Rules() {
			args = append(args, r)
		}
		if err := c.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("ACL SETUSER %s: %w", u.Name, err)
		}
	}
	for _, name := range remove {
		if err := c.Do(ctx, "ACL", "DELUSER", name).Err(); err != nil {
			return fmt.Errorf("ACL DELUSER %s: %w", name, err)
		}
	}
	if err := setAdminPasswords(ctx, c, change.AdminAccept, change.AdminRetire); err != nil {
		return err
	}
	if err := c.Do(ctx, "ACL", "SAVE").Err(); err != nil {
		return fmt.Errorf("ACL SAVE (the change is live but not in the ACL file; the next apply saves it again): %w", err)
	}
	return nil
}

// setAdminPasswords adds accept to the default user's password hashes and removes retire
// (ACL SETUSER default #<accept> !<retire>), where it is not so already. The admin is
// changed last, on a connection that is already logged in: it stays so.
func setAdminPasswords(ctx context.Context, c adminConn, accept, retire []string) error {
	if len(accept)+len(retire) == 0 {
		return nil
	}
	live, err := read(ctx, c, []string{"default"})
	if err != nil {
		return err
	}
	has := map[string]bool{}
	for _, h := range live["default"].PasswordHashes {
		has[h] = true
	}
	args := []any{"ACL", "SETUSER", "default"}
	for _, h := range accept {
		if !has[h] {
			args = append(args, "#"+h)
		}
	}
	for _, h := range retire {
		if has[h] && !slices.Contains(accept, h) {
			args = append(args, "!"+h)
		}
	}
	if len(args) == 3 {
		return nil
	}
	if err := c.Do(ctx, args...).Err(); err != nil {
		return fmt.Errorf("ACL SETUSER default (admin passwords): %w", err)
	}
	return nil
}

// ApplyAll runs Apply on every endpoint at once and returns the failures by endpoint (nil
// when every master took the change). A master that is down fails alone: the others are
// changed, and the next apply converges it.
func (t Target) ApplyAll(ctx context.Context, endpoints []string, users []User, remove []string) map[string]error {
	return t.ApplyChangeAll(ctx, endpoints, Change{Users: users, Remove: remove})
}

// ApplyChangeAll is ApplyAll with the admin's passwords too (Change).
func (t Target) ApplyChangeAll(ctx context.Context, endpoints []string, change Change) map[string]error {
	return t.each(endpoints, func(ep string) error { return t.ApplyChange(ctx, ep, change) })
}

// ReadAll runs Read on every endpoint at once: the live users by endpoint, and the
// failures by endpoint.
func (t Target) ReadAll(ctx context.Context, endpoints []string, names []string) (map[string]map[string]Definition, map[string]error) {
	var mu sync.Mutex
	live := map[string]map[string]Definition{}
	failed := t.each(endpoints, func(ep string) error {
		users, err := t.Read(ctx, ep, names)
		if err == nil {
			mu.Lock()
			live[ep] = users
			mu.Unlock()
		}
		return err
	})
	return live, failed
}

func (t Target) each(endpoints []string, fn func(endpoint string) error) map[string]error {
	var (
		mu     sync.Mutex
		wg     sync.WaitGroup
		failed map[string]error
	)
	for _, ep := range endpoints {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(ep); err != nil {
				mu.Lock()
				if failed == nil {
					failed = map[string]error{}
				}
				failed[ep] = err
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return failed
}
