package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/redlock-kit/redlock-kit/internal/localmasters"
	"github.com/redlock-kit/redlock-kit/lockagent/agentconfig"
	"github.com/redlock-kit/redlock-kit/lockagent/internal/bench"
)

const benchUsage = `Usage: lockagent bench [--spawn N | -c agent.json | --endpoints ...] [flags]

Measures, in one run and on the same masters, side by side:
  lockagent  this project's library (lockagent/redlock), default options (its releases
             are applied in memory and not logged to the AOF: no fsync per release);
             its scripts run as the kit's function library (FCALL)
  lockagent-evalsha
             the same on a user that may EVAL but not FCALL: the scripts go by
             EVALSHA, as before the function library (--spawn only: it creates that
             user, which redsync and the floor use too)
  lockagent-durable
             the same with Options.DurableRelease: releases logged and fsynced, as
             redsync's and the floor's are
  lockagent-nofence
             the same without fencing tokens (Options.NoFencing): a plain SET NX PX
             instead of the acquire script that also raises the fence register
  redsync    github.com/go-redsync/redsync/v4 with its go-redis v9 pool, using its
             DEFAULT retry settings (32 tries, 50-250ms random delay)
  floor      a bare go-redis fan-out: SET NX PX to every master at once, then EVALSHA
             compare-and-delete (logged); waits for every master; one attempt, no retries
  lockagent-tls
             the library with its defaults over TLS, on as many masters again that serve
             TLS only (--spawn starts them): the column lockagent-tls/lockagent is the
             cost of TLS
Scenarios:
  sequential   one goroutine, --iterations acquire+release pairs: p50/p99 latency, and
               allocations and bytes per pair (runtime.MemStats deltas)
  throughput   --goroutines goroutines on distinct keys for --duration: pairs/s
  in-process contention
               --contenders goroutines sharing one client on one key for --duration,
               each holding it for --hold: acquisitions/s, wait from first attempt to
               acquisition (p50/p99/max), fairness (Jain's index and min/max
               acquisitions per goroutine)
  cross-process contention (lockagent and redsync)
               for each count in --processes, that many worker processes per
               implementation (this binary, re-executed; the deployment and its
               password are passed on stdin, never on the command line), each with
               its own client, compete for one key for --duration, holding it for
               --hold: acquisitions/s, wait p50/p99/max, Jain's index across
               processes, min/max per process; every hold is checked against every
               other on CLOCK_MONOTONIC (one clock for all processes; Linux only) and
               fences must strictly increase in acquisition order. redsync's workers
               use the EVAL user with --spawn, as redsync does in-process. Then the
               hand-off against its floor: the gap from a holder's unlock call to the
               next holder's acquisition (p50/p99) and the utilisation (time held /
               wall time), beside one fsynced majority write (SET PX to every master,
               timed to the majority's reply) measured on the same masters just before
               each window, one after another and, to read a long hold against, each
               after a pause as long as the hold (at most 100ms), and beside a bare
               round (a PING to every master, timed to the majority's reply) measured
               idle and during the window: the gap less how much longer such a
               round took under the window's load, a diagnostic (that load is
               mostly the lock's own work); for the library, the hand-off's
               timeline (p50s after the unlock call): when the request to the
               majority-th master started to go out, when each of a majority of
               masters' notices reached the next holder, and how long after the last
               of them its lock call returned; with --spawn (or an admin user in
               agent.json) also the masters' CPU time and commands per acquisition
               (INFO); after the library's cell, a bare relay with as many worker
               processes: a turn passed around a ring by a PUBLISH to every master,
               taken at the majority's messages, held for --hold (no lock, no
               script, no fsync): a hand-off by notice without the lock's work,
               with that many processes, and how it grows with them
Then the ratios of FCALL vs EVALSHA, of the library vs redsync and vs the floor, and
the issue's targets.
Numbers depend on the machine and its disk (appendfsync always fsyncs every write).

Masters:
  --spawn N            start N masters (odd, >= 3) with the deployment's config (AOF
                       appendfsync always) in a temp dir, and stop them at the end, also
                       on Ctrl-C. Otherwise the deployment below is used, with keys named
                       lockagent-bench:<implementation>:... (a fixed set: the fence
                       registers have no TTL); run one bench at a time per deployment.
  --placement P        with --spawn, where the cross-process scenario runs (Linux):
                       split   (the default with 2 CPUs or more) the masters on the upper
                               half of this process's cores (of its CPUs, on one core),
                               the bench and its workers on the rest, keeping the
                               GOMAXPROCS they have with every CPU: no client runs on the
                               masters' CPUs. The masters share theirs with each other,
                               and both sides share the machine's caches (and, on one
                               core, the core). The TLS-only masters of lockagent-tls,
                               idle then, are not moved
                       shared  every process on every CPU: the masters compete with the
                               worker processes for them
                       The table says which one ran. The scenarios before it (one client
                       process: sequential, throughput, in-process contention) always run
                       every process on every CPU.

` + deploymentHelp + `
Benchmark:
  --implementations L  comma-separated subset of lockagent,lockagent-evalsha,
                       lockagent-durable,lockagent-nofence,redsync,floor,lockagent-tls
                       (default all; lockagent-evalsha and lockagent-tls with --spawn only),
                       plus lockagent-noqueue on request: the library without its wait
                       queue (Options.NoWaitQueue), every waiting process competing for
                       each release as before the queue
  --iterations N       sequential pairs per implementation (default 1000)
  --duration D         length of each concurrent scenario per implementation (default 5s)
  --rounds N           split sequential and throughput into N blocks per implementation,
                       interleaved, so that background load hits all alike (default 5)
  --goroutines N       throughput goroutines (default 64)
  --contenders N       in-process contention goroutines (default 16)
  --processes L        comma-separated worker process counts of the cross-process
                       scenario (default 4,8,16,32,64; 0 skips it)
  --hold D             how long a contender holds the lock (default 1ms), slept with
                       nanosleep(2): Go's timers would round it up to the next
                       millisecond in a process whose sockets are busy
  --ttl D              TTL of every lock, the same for all (default 10s)
  --cpuprofile FILE    write a CPU profile of the whole run (go tool pprof FILE)
  --memprofile FILE    write an allocation profile at the end
                       (go tool pprof -sample_index=alloc_space FILE)
  --svg FILE           also write the results as an SVG file (per scenario a bar per
                       implementation; opens in a browser with no network)

Exit codes:
  0   the table was printed (targets missed are reported, not failed)
  1   the benchmark could not run (masters could not start, errors)
  64  usage or configuration error
  130 interrupted (Ctrl-C); spawned masters and worker processes were stopped
`

// benchMain is `lockagent bench`. It returns the process exit code.
// benchOptions are bench's own flags besides the benchmark's Config.
type benchOptions struct {
	spawn      int
	impls      string
	processes  string
	cpuprofile string
	memprofile string
	svg        string
	placement  string
	cfg        bench.Config
}

// newBenchFlags declares bench's flags; benchUsage documents each of them.
func newBenchFlags() (*flag.FlagSet, *deploymentFlags, *benchOptions) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	dep := addDeploymentFlags(fs)
	o := &benchOptions{}
	fs.IntVar(&o.spawn, "spawn", 0, "start N masters")
	fs.StringVar(&o.impls, "implementations", "", "subset to run")
	fs.IntVar(&o.cfg.Iterations, "iterations", 1000, "sequential pairs")
	fs.DurationVar(&o.cfg.Duration, "duration", 5*time.Second, "concurrent scenario length")
	fs.IntVar(&o.cfg.Rounds, "rounds", 5, "interleaved rounds")
	fs.IntVar(&o.cfg.Goroutines, "goroutines", 64, "throughput goroutines")
	fs.IntVar(&o.cfg.Contenders, "contenders", 16, "contention goroutines")
	fs.StringVar(&o.processes, "processes", "4,8,16,32,64", "cross-process worker counts")
	fs.DurationVar(&o.cfg.Hold, "hold", time.Millisecond, "hold time under contention")
	fs.DurationVar(&o.cfg.TTL, "ttl", 10*time.Second, "lock TTL")
	fs.StringVar(&o.cpuprofile, "cpuprofile", "", "CPU profile file")
	fs.StringVar(&o.memprofile, "memprofile", "", "allocation profile file")
	fs.StringVar(&o.svg, "svg", "", "write the results as an SVG bar chart to FILE")
	fs.StringVar(&o.placement, "placement", "", "split or shared: the spawned masters' CPUs")
	return fs, dep, o
}

func benchMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs, dep, o := newBenchFlags()
	if code, ok := parseFlags(fs, args, "bench", benchUsage, stdout, stderr); !ok {
		return code
	}
	if fs.NArg() > 0 {
		return usageError(stderr, "bench", fmt.Errorf("unexpected argument %q: bench takes only flags", fs.Arg(0)))
	}
	spawn, impls, cpuprofile, cfg := o.spawn, o.impls, o.cpuprofile, &o.cfg
	log, err := dep.logger(stderr)
	if err != nil {
		return usageError(stderr, "bench", err)
	}
	cfg.Log = log
	if impls != "" {
		cfg.Implementations = agentconfig.SplitList(impls)
	}
	if err := checkBenchConfig(spawn, *cfg); err != nil {
		return usageError(stderr, "bench", err)
	}
	procs, err := parseProcesses(o.processes)
	if err != nil {
		return usageError(stderr, "bench", err)
	}
	if len(procs) > 0 && !bench.CrossSupported {
		set := false
		fs.Visit(func(f *flag.Flag) { set = set || f.Name == "processes" })
		if set {
			return usageError(stderr, "bench", fmt.Errorf("--processes %s: the cross-process scenario needs Linux (one CLOCK_MONOTONIC for all processes); use --processes 0", o.processes))
		}
		fmt.Fprintln(stderr, "lockagent bench: skipping the cross-process scenario: it needs Linux (one CLOCK_MONOTONIC for all processes)")
		procs = nil
	}
	split, err := choosePlacement(o.placement, spawn, len(procs) > 0, stderr)
	if err != nil {
		return usageError(stderr, "bench", err)
	}

	// Ctrl-C cancels the run; signals stay caught until the spawned masters are stopped
	// (the deferred Close runs before stop), so a second Ctrl-C cannot orphan them.
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()

	var deployment, evalDeployment *agentconfig.Config
	if spawn > 0 {
		fmt.Fprintf(stderr, "lockagent bench: starting %d masters (appendfsync always)...\n", spawn)
		cluster, err := localmasters.New(localmasters.Options{Masters: spawn})
		if err != nil {
			fmt.Fprintf(stderr, "lockagent bench: %v\n", err)
			return 1
		}
		defer func() {
			if err := cluster.Close(); err != nil {
				fmt.Fprintf(stderr, "lockagent bench: stopping masters: %v\n", err)
			}
		}()
		deployment = &agentconfig.Config{Endpoints: cluster.Addrs(), Username: localmasters.LockUser, Password: localmasters.LockPassword}
		// redsync, the floor and lockagent-evalsha send their own Lua: the EVAL user.
		evalDeployment = &agentconfig.Config{Endpoints: cluster.Addrs(), Username: localmasters.EvalUser, Password: localmasters.EvalPassword}
		stopTLS, err := spawnTLSMasters(spawn, cfg, stderr)
		if err != nil {
			fmt.Fprintf(stderr, "lockagent bench: %v\n", err)
			return 1
		}
		defer stopTLS()
		if len(procs) > 0 {
			cfg.CrossPlacement = "shared: every process on every CPU"
			if l := ownCPUList(); l != "" {
				cfg.CrossPlacement = "shared: every process on CPU " + l
			}
			if split != nil {
				cfg.CrossPlacement = fmt.Sprintf("split: the %d masters on CPU %s, the bench and its workers on CPU %s (GOMAXPROCS %d): no client runs on the masters' CPUs",
					spawn, split.mastersList, split.clientsList, runtime.GOMAXPROCS(0))
				cfg.PlaceCross = func() error {
					if err := pinMasters(split, cluster); err != nil {
						if errors.Is(err, errMasterStopped) {
							return err // no placement would help
						}
						return fmt.Errorf("--placement split: %w; use --placement shared", err)
					}
					// Last, once every master is pinned: the workers started from now on
					// inherit this process's CPUs.
					if err := split.pinBench(); err != nil {
						return fmt.Errorf("--placement split: %w; use --placement shared", err)
					}
					return nil
				}
			}
			fmt.Fprintf(stderr, "lockagent bench: the cross-process scenario's placement: %s\n", cfg.CrossPlacement)
		}
	} else {
		if deployment, err = dep.load(); err != nil {
			return usageError(stderr, "bench", err)
		}
		if max := deployment.MaxLockTTL.Duration; max > 0 && cfg.TTL > max {
			return usageError(stderr, "bench", fmt.Errorf("--ttl %v: longer than the deployment's max lock TTL %v", cfg.TTL, max))
		}
	}
	cfg.NewClients = func() []*redis.Client { return lockClients(deployment) }
	// INFO (the masters' work per acquisition in the cross-process scenario) needs the
	// admin user: the spawned masters' or the deployment's, when it names one.
	admin := *deployment
	if spawn > 0 {
		admin.Username, admin.Password = "", localmasters.AdminPassword
	} else {
		admin.Username, admin.Password = deployment.AdminUsername, deployment.AdminPassword
	}
	if admin.Password != "" {
		cfg.NewAdminClients = func() []*redis.Client { return lockClients(&admin) }
	}
	if evalDeployment != nil {
		cfg.NewEvalClients = func() []*redis.Client { return lockClients(evalDeployment) }
	}
	if len(procs) > 0 {
		if err := crossProcessConfig(cfg, procs, deployment, evalDeployment, split != nil); err != nil {
			fmt.Fprintf(stderr, "lockagent bench: %v\n", err)
			return 1
		}
	}
	// A fixed set of names: the library's fence registers have no TTL, so a random
	// prefix per run would leave new keys on a real deployment every time.
	cfg.KeyPrefix = "lockagent-bench:"

	if cpuprofile != "" {
		f, err := os.Create(cpuprofile)
		if err != nil {
			return usageError(stderr, "bench", fmt.Errorf("--cpuprofile: %w", err))
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			return usageError(stderr, "bench", fmt.Errorf("--cpuprofile: %w", err))
		}
		defer pprof.StopCPUProfile()
	}

	fmt.Fprintf(stderr, "lockagent bench: %d masters %v; implementations %v\n", len(deployment.Endpoints), deployment.Endpoints, implsOrAll(cfg.Implementations))
	rep, err := bench.Run(ctx, *cfg)
	if err != nil {
		if ctx.Err() != nil {
			fmt.Fprintln(stderr, "lockagent bench: interrupted")
			return exitSignalBase + int(syscall.SIGINT)
		}
		fmt.Fprintf(stderr, "lockagent bench: %v\n", err)
		return 1
	}
	if err := rep.WriteTable(stdout); err != nil {
		fmt.Fprintf(stderr, "lockagent bench: %v\n", err)
		return 1
	}
	if o.svg != "" {
		if err := os.WriteFile(o.svg, []byte(rep.SVG()), 0o644); err != nil {
			fmt.Fprintf(stderr, "lockagent bench: --svg: %v\n", err)
			return 1
		}
	}
	if o.memprofile != "" {
		if err := writeAllocProfile(o.memprofile); err != nil {
			fmt.Fprintf(stderr, "lockagent bench: --memprofile: %v\n", err)
			return 1
		}
	}
	return exitOK
}

// parseProcesses reads --processes: counts of at least 2, or "0" for none.
func parseProcesses(s string) ([]int, error) {
	if strings.TrimSpace(s) == "0" {
		return nil, nil
	}
	var out []int
	for _, f := range agentconfig.SplitList(s) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 2 {
			return nil, fmt.Errorf("--processes %q: want comma-separated counts of at least 2, such as 4,8,16 (or 0 to skip the cross-process scenario)", s)
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--processes %q: want comma-separated counts such as 4,8,16 (or 0 to skip the cross-process scenario)", s)
	}
	return out, nil
}

// crossProcessConfig sets up the cross-process scenario: worker processes are this
// binary with the hidden bench-worker command, and get the deployment (the lock user's,
// and the EVAL user's for redsync when there is one, as in-process) on their stdin.
func crossProcessConfig(cfg *bench.Config, procs []int, deployment, evalDeployment *agentconfig.Config, pinned bool) error {
	exe, err := os.Executable()
	if err != nil {
		return fmt.Errorf("cannot find this binary to start the cross-process scenario's workers: %w", err)
	}
	if cfg.WorkerDeployment, err = workerDeployment(deployment); err != nil {
		return err
	}
	if evalDeployment != nil {
		if cfg.WorkerEvalDeployment, err = workerDeployment(evalDeployment); err != nil {
			return err
		}
	}
	cfg.Processes = procs
	cfg.SpawnWorker = func() (*exec.Cmd, error) {
		cmd := exec.Command(exe, benchWorkerCommand)
		cmd.Env = os.Environ()
		if pinned {
			// A worker on fewer CPUs keeps the bench's Go runtime (see cpuSplit.pinBench),
			// whatever GOMAXPROCS said (Go ignores a value it cannot read).
			cmd.Env = append(cmd.Env, "GOMAXPROCS="+strconv.Itoa(runtime.GOMAXPROCS(0)))
		}
		return cmd, nil
	}
	return nil
}

// workerDeployment is what a worker needs of a deployment: no admin credentials.
func workerDeployment(d *agentconfig.Config) (json.RawMessage, error) {
	w := *d
	w.AdminUsername, w.AdminPassword = "", ""
	return json.Marshal(&w)
}

// benchWorkerCommand is the hidden command that runs one worker process of bench's
// cross-process scenario.
const benchWorkerCommand = "bench-worker"

// benchWorkerMain runs one worker: its spec (with the deployment, password included)
// comes on stdin from the bench that started it, its result goes to stdout.
func benchWorkerMain(ctx context.Context, stdin io.Reader, stdout, stderr io.Writer) int {
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	err := bench.ServeWorker(ctx, stdin, stdout, func(raw json.RawMessage) ([]*redis.Client, error) {
		var d agentconfig.Config
		if err := json.Unmarshal(raw, &d); err != nil {
			return nil, fmt.Errorf("deployment: %w", err)
		}
		if len(d.Endpoints) == 0 {
			return nil, errors.New("deployment: no endpoints (bench-worker is started by lockagent bench, not by hand)")
		}
		return lockClients(&d), nil
	})
	if err != nil {
		fmt.Fprintf(stderr, "lockagent %s: %v\n", benchWorkerCommand, err)
		return 1
	}
	return exitOK
}

// choosePlacement reads --placement: with --spawn, split (the default where this process
// may run on 2 CPUs or more) puts the masters of the cross-process scenario on CPUs no
// client runs on; shared leaves every process on every CPU. It returns nil for shared,
// and when no cross-process scenario runs.
func choosePlacement(value string, spawn int, cross bool, stderr io.Writer) (*cpuSplit, error) {
	switch value {
	case "", "split", "shared":
	default:
		return nil, fmt.Errorf("--placement %q: want split (the masters on CPUs of their own) or shared (every process on every CPU)", value)
	}
	if spawn == 0 {
		if value != "" {
			return nil, fmt.Errorf("--placement %s: needs --spawn (a deployment's masters are not processes the bench places)", value)
		}
		return nil, nil
	}
	if !cross {
		if value != "" {
			return nil, fmt.Errorf("--placement %s: places the cross-process scenario, which this run skips (--processes 0)", value)
		}
		return nil, nil
	}
	if value == "shared" {
		return nil, nil
	}
	split, err := splitCPUs()
	if err != nil {
		if value == "split" {
			return nil, fmt.Errorf("--placement split: %w; use --placement shared", err)
		}
		fmt.Fprintf(stderr, "lockagent bench: placement shared (%v)\n", err)
		return nil, nil
	}
	return split, nil
}

// errMasterStopped is pinMasters' error for a master that is no longer running.
var errMasterStopped = errors.New("it is not running")

// pinMasters puts every master of cluster on the masters' CPUs (nothing when split is nil).
func pinMasters(split *cpuSplit, cluster *localmasters.Cluster) error {
	if split == nil {
		return nil
	}
	for _, m := range cluster.Masters {
		pid := m.Pid()
		if pid == 0 {
			return fmt.Errorf("master %s: %w", m.Addr, errMasterStopped)
		}
		if err := split.pinMaster(pid); err != nil {
			return fmt.Errorf("master %s: %w", m.Addr, err)
		}
	}
	return nil
}

func checkBenchConfig(spawn int, cfg bench.Config) error {
	switch {
	case spawn < 0 || (spawn > 0 && (spawn < 3 || spawn%2 == 0)):
		return fmt.Errorf("--spawn %d: want an odd number of masters >= 3, such as 5", spawn)
	case cfg.Iterations <= 0:
		return fmt.Errorf("--iterations %d: must be positive", cfg.Iterations)
	case cfg.Duration <= 0:
		return fmt.Errorf("--duration %v: must be positive, such as 5s", cfg.Duration)
	case cfg.Rounds <= 0 || cfg.Rounds > cfg.Iterations:
		return fmt.Errorf("--rounds %d: must be between 1 and --iterations", cfg.Rounds)
	case cfg.Goroutines <= 0:
		return fmt.Errorf("--goroutines %d: must be positive", cfg.Goroutines)
	case cfg.Contenders < 2:
		return fmt.Errorf("--contenders %d: contention needs at least 2", cfg.Contenders)
	case cfg.Hold <= 0:
		return fmt.Errorf("--hold %v: must be positive, such as 1ms", cfg.Hold)
	case cfg.TTL <= 0:
		return fmt.Errorf("--ttl %v: must be positive, such as 10s", cfg.TTL)
	}
	for _, name := range cfg.Implementations {
		known := false
		for _, k := range append([]string{bench.LockagentTLS, bench.LockagentNoQueue}, bench.AllImplementations...) {
			known = known || name == k
		}
		if !known {
			return fmt.Errorf("--implementations: unknown %q; want a subset of %v", name, bench.AllImplementations)
		}
	}
	return nil
}

func writeAllocProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

func implsOrAll(l []string) []string {
	if len(l) == 0 {
		return bench.AllImplementations
	}
	return l
}
