// Package localmasters starts real redis-server masters on this machine, for the bench
// (`lockagent bench --spawn`) and, through internal/redistest, for tests. It imports no
// testing package, so a released binary that spawns masters does not link it.
//
// Each master runs with the deployment's safe configuration (internal/redisconf: AOF
// appendfsync always, noeviction, admin password, restricted lock user, the kit's function
// library loaded at every start) in its own temp
// dir on a free loopback port. A test can SIGKILL, SIGSTOP/SIGCONT, restart and cleanly
// stop any master. Every process is stopped by its pid: New returns a Cluster whose Close the
// caller must call (redistest.Start does it in t.Cleanup).
package localmasters

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/funclib"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
)

// Options configure a cluster. Zero values are sensible defaults.
type Options struct {
	Masters      int    // number of masters; 5 when zero
	ServerBinary string // redis-server (or valkey-server); $REDLOCK_SERVER_BINARY or "redis-server" when empty
	Host         string // loopback address; one claimed for the cluster when empty (ClaimLoopback)
	Dir          string // parent dir for data dirs; a new temp dir when empty
	MaxMemory    string // redisconf default when empty
	// AppendFsync overrides the safe "always" (only for tests that show why it matters).
	AppendFsync string
	// Clock, when set, skews every master's wall clock (see ClockSkew).
	Clock *ClockSkew
	// LockUsers, when set, replace the single lock user: one user per tenant, each
	// confined to its key prefix (see redisconf.LockUser). Such a cluster has no EVAL user.
	LockUsers []redisconf.LockUser
	// Monitor adds the monitoring user (MonitorUser, MonitorPassword; redisconf.MonitorUserCommands).
	Monitor bool
	// TLS makes every master serve TLS only, with a server certificate for Host signed by
	// the cluster's own CA (Cluster.CACertPEM; Master.TLSConfig trusts it).
	TLS bool
	// ACLFile puts every user in an ACL file in the master's data dir (redisconf.Config.ACLFile:
	// password hashes only), so users changed live (ACL SAVE) survive a restart.
	ACLFile bool
	// SeedFences applies the host gate's fence seeding rule at every start, as a host
	// rendered with seed_fences does (see seedGate): a data dir with no AOF, or with AOF files
	// other than those Shutdown left (a restored backup), gets the rendered ACL file, lock
	// users off, and the master marks itself unseeded where it has no record (or, restored,
	// whatever its record says).
	// Needs ACLFile and LockUsers.
	SeedFences bool
}

// Credentials every harness master shares. The lock user may FCALL the kit's functions
// and run no other Lua; the EVAL user is the one for clients that send their own scripts
// (redsync in the interop tests and the bench), as a deployment gives such clients.
const (
	AdminPassword = "admin-secret-for-tests"
	LockUser      = redisconf.DefaultLockUser
	LockPassword  = "lock-secret-for-tests"
	EvalUser      = redisconf.DefaultEvalUser
	EvalPassword  = "eval-secret-for-tests"
	// The monitoring user of a cluster started with Options.Monitor.
	MonitorUser     = redisconf.DefaultMonitorUser
	MonitorPassword = "monitor-secret-for-tests"
)

// Cluster is a set of independent masters.
type Cluster struct {
	Masters []*Master
	// CACertPEM is the CA every master's certificate is signed by (Options.TLS); "" without TLS.
	CACertPEM string
	dir       string
	ownDir    bool
	loopback  *LoopbackClaim // the cluster's own address, when Options.Host was empty
}

// Master is one redis-server process and its data dir.
type Master struct {
	Host       string
	Port       int
	Addr       string // host:port
	DataDir    string
	ConfigFile string
	// TLSConfig is the client side of a TLS master (trusts the cluster's CA); nil without TLS.
	TLSConfig *tls.Config
	binary    string
	clock     *ClockSkew
	seed      *seedGate // Options.SeedFences; nil without
	// published is the restart delay PublishDeployment claimed for this master (0: none):
	// Restart publishes it again for the new run, as every runtime of the kit does.
	published time.Duration

	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{} // closed when cmd has exited
	admin *redis.Client
}

// New starts a cluster. The caller must Close it.
func New(opts Options) (*Cluster, error) {
	if opts.Masters == 0 {
		opts.Masters = 5
	}
	if opts.ServerBinary == "" {
		opts.ServerBinary = os.Getenv("REDLOCK_SERVER_BINARY")
	}
	if opts.ServerBinary == "" {
		opts.ServerBinary = "redis-server"
	}
	bin, err := exec.LookPath(opts.ServerBinary)
	if err != nil {
		return nil, fmt.Errorf("%s not found on PATH: run `make deps` (installs redis-server with apt-get)", opts.ServerBinary)
	}
	if opts.SeedFences && (!opts.ACLFile || len(opts.LockUsers) == 0) {
		return nil, fmt.Errorf("localmasters: SeedFences needs ACLFile and LockUsers (the lock users it turns off)")
	}
	c := &Cluster{dir: opts.Dir}
	if opts.Host == "" {
		if c.loopback, err = ClaimLoopback(); err != nil {
			return nil, err
		}
		opts.Host = c.loopback.Host
	}
	if c.dir == "" {
		if c.dir, err = os.MkdirTemp("", "localmasters-"); err != nil {
			_ = c.loopback.Release()
			return nil, err
		}
		c.ownDir = true
	}
	var tlsFiles *tlsMaterial
	if opts.TLS {
		if tlsFiles, err = newTLSMaterial(c.dir, opts.Host); err != nil {
			_ = c.Close()
			return nil, err
		}
		c.CACertPEM = tlsFiles.caPEM
	}
	for i := 0; i < opts.Masters; i++ {
		m, err := startMaster(bin, opts, filepath.Join(c.dir, fmt.Sprintf("master-%d", i)), tlsFiles)
		if err != nil {
			_ = c.Close()
			return nil, err
		}
		c.Masters = append(c.Masters, m)
	}
	return c, nil
}

// Addrs returns host:port of every master, in order.
func (c *Cluster) Addrs() []string {
	addrs := make([]string, len(c.Masters))
	for i, m := range c.Masters {
		addrs[i] = m.Addr
	}
	return addrs
}

// LockClients returns one new client per master, authenticated as the restricted lock
// user, with context deadlines honoured. The caller owns (and closes) them.
func (c *Cluster) LockClients() []*redis.Client {
	clients := make([]*redis.Client, len(c.Masters))
	for i, m := range c.Masters {
		clients[i] = m.LockClient()
	}
	return clients
}

// EvalClients returns one new client per master, authenticated as the EVAL user (clients
// that send their own Lua, such as redsync). The caller owns (and closes) them.
func (c *Cluster) EvalClients() []*redis.Client {
	clients := make([]*redis.Client, len(c.Masters))
	for i, m := range c.Masters {
		clients[i] = m.EvalClient()
	}
	return clients
}

// Close stops every master (SIGKILL by pid, after resuming a paused one) and removes the
// temp dir the cluster created. Safe to call twice.
func (c *Cluster) Close() error {
	var errs []error
	for _, m := range c.Masters {
		errs = append(errs, m.stopProcess())
	}
	if c.ownDir {
		errs = append(errs, os.RemoveAll(c.dir))
	}
	// Only once no master of the cluster can come back on the address.
	errs = append(errs, c.loopback.Release())
	return errors.Join(errs...)
}

func startMaster(bin string, opts Options, dataDir string, tm *tlsMaterial) (*Master, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, err
	}
	var lastErr error
	// A free port can be taken between probing and binding; try a few.
	for attempt := 0; attempt < 5; attempt++ {
		port, err := FreePort(opts.Host)
		if err != nil {
			return nil, err
		}
		m := &Master{Host: opts.Host, Port: port, Addr: net.JoinHostPort(opts.Host, strconv.Itoa(port)),
			DataDir: dataDir, ConfigFile: filepath.Join(dataDir, "redis.conf"), binary: bin, clock: opts.Clock}
		rc := redisconf.Config{Bind: opts.Host, Port: port, DataDir: dataDir,
			AdminPassword: AdminPassword, LockUser: LockUser, LockPassword: LockPassword, LockUsers: opts.LockUsers,
			MaxMemory: opts.MaxMemory, AppendFsync: opts.AppendFsync,
			LogFile: filepath.Join(dataDir, "redis.log")}
		if len(opts.LockUsers) == 0 {
			// The EVAL user (for redsync and the like) reaches every key: tenants get none.
			rc.EvalUser, rc.EvalPassword = EvalUser, EvalPassword
		}
		if opts.Monitor {
			rc.MonitorUser, rc.MonitorPassword = MonitorUser, MonitorPassword
		}
		if tm != nil {
			rc.TLS, m.TLSConfig = &tm.files, tm.client
		}
		if opts.ACLFile {
			rc.ACLFile = filepath.Join(dataDir, "users.acl")
			acl, err := rc.RenderACL()
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(rc.ACLFile, []byte(acl), 0o600); err != nil {
				return nil, err
			}
			if opts.SeedFences {
				off := rc
				off.LockUsersOff = true
				rendered, err := off.RenderACL()
				if err != nil {
					return nil, err
				}
				m.seed = &seedGate{aclFile: rc.ACLFile, rendered: rendered}
			}
		}
		conf, err := rc.Render()
		if err != nil {
			return nil, err
		}
		if err := os.WriteFile(m.ConfigFile, []byte(conf), 0o600); err != nil {
			return nil, err
		}
		if lastErr = m.Restart(); lastErr == nil {
			return m, nil
		}
	}
	return nil, fmt.Errorf("start master in %s: %w", dataDir, lastErr)
}

// FreePort returns a TCP port that was free on host a moment ago.
func FreePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// Pid returns the redis-server pid, or 0 when it is not running.
func (m *Master) Pid() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cmd == nil || m.exited() {
		return 0
	}
	return m.cmd.Process.Pid
}

// AOF returns what the master's append-only files hold (every file of its appendonlydir,
// base and increments, one after the other).
func (m *Master) AOF() ([]byte, error) {
	files, err := filepath.Glob(filepath.Join(m.DataDir, "appendonlydir", "*.aof"))
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("no AOF files in %s (is appendonly on?)", m.DataDir)
	}
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		all = append(all, b...)
	}
	return all, nil
}

// Running reports whether the process is alive (it may be paused).
func (m *Master) Running() bool { return m.Pid() != 0 }

func (m *Master) exited() bool {
	select {
	case <-m.done:
		return true
	default:
		return false
	}
}

// Admin returns a client authenticated as the admin (default) user. It is owned by the
// Master and closed with it.
func (m *Master) Admin() *redis.Client {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.admin == nil {
		m.admin = redis.NewClient(&redis.Options{Addr: m.Addr, Password: AdminPassword,
			DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
			ContextTimeoutEnabled: true, MaxRetries: -1, TLSConfig: m.TLSConfig})
	}
	return m.admin
}

// ClientAs returns a new client authenticated as user (a tenant's lock user, say).
func (m *Master) ClientAs(user, password string) *redis.Client {
	return redis.NewClient(&redis.Options{Addr: m.Addr, Username: user, Password: password,
		ContextTimeoutEnabled: true, MaxRetries: -1, DialTimeout: time.Second, DisableIdentity: true})
}

// LockClient returns a new client authenticated as the restricted lock user.
func (m *Master) LockClient() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: m.Addr, Username: LockUser, Password: LockPassword,
		ContextTimeoutEnabled: true, MaxRetries: -1, DialTimeout: time.Second, TLSConfig: m.TLSConfig})
}

// EvalClient returns a new client authenticated as the EVAL user.
func (m *Master) EvalClient() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: m.Addr, Username: EvalUser, Password: EvalPassword,
		ContextTimeoutEnabled: true, MaxRetries: -1, DialTimeout: time.Second})
}

// Restart starts redis-server again on the same port and data dir (the AOF is replayed,
// the script cache is gone), waits until it answers and loads the kit's function library,
// as every runtime of the kit does at a master's start. Starting a running master is an error.
func (m *Master) Restart() error {
	m.mu.Lock()
	if m.cmd != nil && !m.exited() {
		m.mu.Unlock()
		return fmt.Errorf("master %s is already running (pid %d)", m.Addr, m.cmd.Process.Pid)
	}
	if err := m.seed.beforeStart(m.DataDir); err != nil {
		m.mu.Unlock()
		return err
	}
	cmd := exec.Command(m.binary, m.ConfigFile)
	cmd.Dir = m.DataDir
	if m.clock != nil {
		env, err := m.clock.env()
		if err != nil {
			m.mu.Unlock()
			return err
		}
		cmd.Env = env
	}
	// Own process group: a Ctrl-C on the test does not reach it, Close stops it by pid.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		m.mu.Unlock()
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	m.cmd, m.done = cmd, done
	published := m.published
	m.mu.Unlock()
	if err := m.waitReady(done); err != nil {
		return err
	}
	if published > 0 {
		return m.publishDeployment(published)
	}
	return nil
}

func (m *Master) waitReady(done chan struct{}) error {
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		select {
		case <-done:
			log, _ := os.ReadFile(filepath.Join(m.DataDir, "redis.log"))
			return fmt.Errorf("redis-server on %s exited during start:\n%s", m.Addr, tail(string(log), 1500))
		default:
		}
		// Dial first so go-redis does not log every refused connection while redis starts.
		if conn, err := net.DialTimeout("tcp", m.Addr, 200*time.Millisecond); err == nil {
			_ = conn.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			err = m.Admin().Ping(ctx).Err()
			cancel()
			if err == nil {
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
				defer cancel()
				// The seed gate first: a fence is taken through the library only, so the
				// lock users of a master that loaded nothing take none until they are off.
				if err := m.seed.afterStart(ctx, m.Admin()); err != nil {
					_ = m.stopProcess()
					return fmt.Errorf("redis-server on %s: %w", m.Addr, err)
				}
				if err := funclib.Load(ctx, m.Admin()); err != nil {
					_ = m.stopProcess()
					return fmt.Errorf("redis-server on %s: %w", m.Addr, err)
				}
				return nil
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	_ = m.stopProcess()
	return fmt.Errorf("redis-server on %s did not answer within 10s", m.Addr)
}

// Kill sends SIGKILL (a crash: no shutdown, no final fsync) and waits for the exit.
func (m *Master) Kill() error { return m.signalAndWait(syscall.SIGKILL) }

// Pause sends SIGSTOP: the process keeps its port but answers nothing.
func (m *Master) Pause() error { return m.signal(syscall.SIGSTOP) }

// Resume sends SIGCONT to a paused master.
func (m *Master) Resume() error { return m.signal(syscall.SIGCONT) }

// Shutdown stops the master cleanly (SHUTDOWN: AOF fsynced) and waits for the exit.
func (m *Master) Shutdown() error {
	m.mu.Lock()
	done := m.done
	m.mu.Unlock()
	if done == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = m.Admin().Shutdown(ctx).Err() // the connection drops as the server exits
	select {
	case <-done:
		// The seed gate's clean marker: a SHUTDOWN fsyncs the AOF (with it on).
		m.mu.Lock()
		m.seed.cleanStop(m.DataDir)
		m.mu.Unlock()
		return nil
	case <-ctx.Done():
		return fmt.Errorf("master %s did not shut down within 5s", m.Addr)
	}
}

func (m *Master) signal(sig syscall.Signal) error {
	pid := m.Pid()
	if pid == 0 {
		return fmt.Errorf("master %s is not running", m.Addr)
	}
	return syscall.Kill(pid, sig)
}

func (m *Master) signalAndWait(sig syscall.Signal) error {
	m.mu.Lock()
	done := m.done
	m.mu.Unlock()
	if err := m.signal(sig); err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("master %s did not exit after %v", m.Addr, sig)
	}
}

// stopProcess kills the process by pid if it still runs and closes the admin client.
func (m *Master) stopProcess() error {
	m.mu.Lock()
	cmd, done, admin := m.cmd, m.done, m.admin
	m.admin = nil
	m.mu.Unlock()
	if admin != nil {
		_ = admin.Close()
	}
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGCONT) // a paused process must wake to die cleanly in the kernel's books
	_ = syscall.Kill(cmd.Process.Pid, syscall.SIGKILL)
	select {
	case <-done:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("redis-server pid %d did not exit", cmd.Process.Pid)
	}
}

func tail(s string, n int) string {
	if len(s) > n {
		return "..." + s[len(s)-n:]
	}
	return s
}
