//go:build linux

package chaos

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"strconv"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/hostconfig"
	"github.com/redlock-kit/redlock-kit/internal/hostlab"
	"github.com/redlock-kit/redlock-kit/internal/master"
)

// Deployment is five masters on the hosts of a lab, each rendered by hostconfig (Debian's
// redis-server under systemd with the delayed restart) and booted from its user-data.
type Deployment struct {
	Lab          *hostlab.Lab
	Hosts        []*hostlab.Host
	Endpoints    []string
	UserData     []string
	Unit         string
	DataDir      string
	AdminPass    string
	LockUser     string
	LockPass     string
	TTL          time.Duration // max_lock_ttl; the workers' lock TTL
	RestartDelay time.Duration
}

func secret() string {
	var b [24]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Deploy renders and provisions a master on every host of lab (a NoBoot lab) with this
// max lock TTL, and waits until every master serves.
func Deploy(ctx context.Context, lab *hostlab.Lab, ttl time.Duration) (*Deployment, error) {
	redis.SetLogger(discardLogs{}) // WaitServing's dial errors are expected
	d := &Deployment{Lab: lab, Hosts: lab.Hosts(), AdminPass: secret(), LockPass: secret(), TTL: ttl}
	for _, h := range d.Hosts {
		b, err := hostconfig.Render(hostconfig.Host{Spec: master.Spec{Name: h.Name(), Bind: h.Address(),
			MaxLockTTL: ttl, AdminPassword: d.AdminPass, LockPassword: d.LockPass}})
		if err != nil {
			return nil, err
		}
		d.UserData = append(d.UserData, b.UserData)
		d.Endpoints = append(d.Endpoints, net.JoinHostPort(h.Address(), strconv.Itoa(b.Spec.Port)))
		d.Unit, d.DataDir, d.LockUser, d.RestartDelay = b.Server.Unit, b.Server.DataDir, b.Spec.LockUser, b.Spec.RestartDelay
	}
	errs := make([]error, len(d.Hosts))
	var wg sync.WaitGroup
	for i, h := range d.Hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := h.Provision(ctx, d.UserData[i]); err != nil {
				errs[i] = err
				return
			}
			if err := h.WaitCloudInit(ctx); err != nil {
				errs[i] = err
				return
			}
			_, errs[i] = d.WaitServing(ctx, i, 0)
		}()
	}
	wg.Wait()
	return d, errors.Join(errs...)
}

// admin is an admin connection to master i from client host client.
func (d *Deployment) admin(i, client int) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: d.Endpoints[i], Password: d.AdminPass,
		Dialer: d.Lab.DialContext(client), DialTimeout: 300 * time.Millisecond, ReadTimeout: time.Second,
		ContextTimeoutEnabled: true, MaxRetries: -1, DialerRetries: 1, PoolSize: 1})
}

// WaitServing polls master i from client host client (a new connection, AUTH and PING,
// every 20 ms) until it answers; it returns the monotonic time it first did.
func (d *Deployment) WaitServing(ctx context.Context, i, client int) (int64, error) {
	limit := time.Now().Add(d.RestartDelay + 3*time.Minute)
	var last error
	for time.Now().Before(limit) {
		c := d.admin(i, client)
		pctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		last = c.Ping(pctx).Err()
		cancel()
		_ = c.Close()
		if last == nil {
			return Mono(), nil
		}
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
	}
	return 0, fmt.Errorf("master %s not serving after %v: %v", d.Endpoints[i], d.RestartDelay+3*time.Minute, last)
}
