//go:build linux

package chaos

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/redlock-kit/redlock-kit/internal/hostlab"
	"github.com/redlock-kit/redlock-kit/internal/redisconf"
	"github.com/redlock-kit/redlock-kit/internal/redistest"
)

// The nemesis' fault kinds within the deployment's assumptions: a crashed master stays
// down restart_delay, clocks run within the drift allowance, and anything can happen to
// the network and the clients.
const (
	FaultKill        = "kill-9-master"          // kill -9 of redis-server; systemd holds its restart
	FaultPower       = "power-off-boot"         // hard stop of a host, then boot (same disk)
	FaultReboot      = "clean-reboot"           // systemctl reboot
	FaultReplace     = "replace-host"           // a new, empty host at the address
	FaultIsolate     = "partition-one-host"     // one host cut off from everybody
	FaultCutMajority = "partition-majority"     // three hosts cut off from one client host
	FaultOneWay      = "partition-one-way"      // replies of three hosts to one client host dropped
	FaultPauseMaster = "sigstop-master"         // SIGSTOP of redis-server, then SIGCONT
	FaultPauseClient = "sigstop-client-holding" // a worker stopped while holding, past its validity
	FaultClockSkew   = "clock-skew-in-allowance"
)

// Assumption-breaking kinds, only in the labelled violation run.
const (
	FaultWipeMajority = "VIOLATION-majority-data-loss-no-delay" // three masters lose their lock keys and serve on
	FaultClockStep    = "VIOLATION-clock-step-majority"         // three masters' clocks step 3 TTLs forward
)

// SafeFaults are the kinds of a normal run.
var SafeFaults = []string{FaultKill, FaultPower, FaultReboot, FaultReplace, FaultIsolate, FaultCutMajority,
	FaultOneWay, FaultPauseMaster, FaultPauseClient, FaultClockSkew}

// ViolationFaults are the kinds of the violation run.
var ViolationFaults = []string{FaultWipeMajority, FaultClockStep}

const (
	shimDir     = "/usr/lib/redlock-chaos" // ExecPaths of Debian's unit include /usr/lib
	shimPath    = shimDir + "/clockskew.so"
	stepPath    = shimDir + "/step" // the shim adds the int64 in it to the wall clock
	clockDropIn = "zz-chaos-clock.conf"
)

type worker struct {
	id, client int
	pid        int
	proc       *os.Process
	done       chan struct{}
}

type nemesis struct {
	d       *Deployment
	rng     *rand.Rand
	workers []*worker
	logf    func(string, ...any)
	offset  map[int]time.Duration // clock-step offsets in force, per host
}

func (n *nemesis) dur(lo, hi time.Duration) time.Duration {
	return lo + time.Duration(n.rng.Int64N(int64(hi-lo)+1))
}

// pick returns k distinct host indexes.
func (n *nemesis) pick(k int) []int {
	return n.rng.Perm(len(n.d.Hosts))[:k]
}

func (n *nemesis) names(idx []int) []string {
	var out []string
	for _, i := range idx {
		out = append(out, n.d.Hosts[i].Name())
	}
	return out
}

// serving waits for master i from client host 0 and returns a Down entry from start.
func (n *nemesis) serving(ctx context.Context, i int, start int64) (Down, error) {
	end, err := n.d.WaitServing(ctx, i, 0)
	return Down{Master: i, Start: start, End: end}, err
}

func (n *nemesis) inject(ctx context.Context, kind string) (Fault, error) {
	d := n.d
	ttl := d.TTL
	f := Fault{Kind: kind}
	var err error
	switch kind {
	case FaultKill, FaultPower, FaultReboot, FaultReplace, FaultPauseMaster, FaultIsolate, FaultClockSkew:
		i := n.pick(1)[0]
		h := d.Hosts[i]
		f.Hosts = n.names([]int{i})
		f.Start = Mono()
		switch kind {
		case FaultKill:
			err = h.Kill(ctx, d.Unit, syscall.SIGKILL)
		case FaultPower:
			if err = h.PowerOff(ctx); err == nil {
				off := n.dur(500*time.Millisecond, 2*time.Second)
				f.Note = fmt.Sprintf("off for %v", off)
				time.Sleep(off)
				err = h.Boot(ctx)
			}
		case FaultReboot:
			err = h.Reboot(ctx)
		case FaultReplace:
			err = h.Replace(ctx, d.UserData[i])
		case FaultPauseMaster:
			var pid int
			if pid, err = h.MainPID(ctx, d.Unit); err == nil {
				if err = syscall.Kill(pid, syscall.SIGSTOP); err == nil {
					p := n.dur(ttl/2, 2*ttl)
					f.Note = fmt.Sprintf("stopped for %v", p)
					time.Sleep(p)
					err = syscall.Kill(pid, syscall.SIGCONT)
				}
			}
		case FaultIsolate:
			if err = d.Lab.Isolate(h); err == nil {
				p := n.dur(ttl, 2*ttl)
				f.Note = fmt.Sprintf("isolated for %v", p)
				time.Sleep(p)
				err = d.Lab.Heal()
			}
		case FaultClockSkew:
			return n.clockSkew(ctx, f, i)
		}
		if err != nil {
			return f, err
		}
		down, err := n.serving(ctx, i, f.Start)
		f.Down, f.End = []Down{down}, down.End
		return f, err
	case FaultCutMajority, FaultOneWay:
		client := n.rng.IntN(n.clients())
		idx := n.pick(3)
		f.Hosts, f.Clients = n.names(idx), []int{client}
		f.Start = Mono()
		if kind == FaultCutMajority {
			var hs []*hostlab.Host
			for _, i := range idx {
				hs = append(hs, d.Hosts[i])
			}
			err = d.Lab.CutClient(client, hs...)
		} else {
			for _, i := range idx {
				if err = d.Lab.OneWay(d.Hosts[i].Address(), d.Lab.ClientAddress(client)); err != nil {
					break
				}
			}
		}
		if err != nil {
			return f, err
		}
		p := n.dur(ttl, 2*ttl)
		f.Note = fmt.Sprintf("for %v", p)
		time.Sleep(p)
		if err := d.Lab.Heal(); err != nil {
			return f, err
		}
		f.End = Mono()
		for _, i := range idx {
			f.Down = append(f.Down, Down{Master: i, Clients: []int{client}, Start: f.Start, End: f.End})
		}
		return f, nil
	case FaultPauseClient:
		return n.pauseClient(ctx, f)
	case FaultWipeMajority:
		// Three masters forget every lock at once and go on serving: what a crash that
		// loses the AOF's tail, restarted with no delay, does to the locks (without its
		// downtime, which on this scale would outlast most holds). The kit's own records,
		// written long before, survive such a loss; a FLUSHALL would take them too, and
		// the runtime takes a master without its deployment record for a flushed one and
		// kills it (the safe outcome this run must not get).
		return n.majority(ctx, f, func(i int) error {
			c := d.admin(i, 0)
			defer c.Close()
			return wipeLocks.Run(ctx, c, nil, redisconf.KitKeyPrefix).Err()
		})
	case FaultClockStep:
		// The running servers' wall clocks jump: no restart, every lock they hold expires.
		idx := n.pick(3)
		f.Hosts = n.names(idx)
		f.Start = Mono()
		errs := make([]error, len(idx))
		var wg sync.WaitGroup
		for j, i := range idx {
			n.offset[i] += 3 * ttl
			offset := n.offset[i]
			wg.Add(1)
			go func() { defer wg.Done(); errs[j] = n.stepClock(ctx, i, offset) }()
		}
		wg.Wait()
		f.End = Mono()
		f.Note = "wall clocks 3 TTLs forward"
		return f, errors.Join(errs...)
	}
	return f, fmt.Errorf("unknown fault kind %q", kind)
}

func (n *nemesis) clients() int {
	max := 0
	for _, w := range n.workers {
		if w.client+1 > max {
			max = w.client + 1
		}
	}
	return max
}

// wipeLocks deletes every key but the kit's own (ARGV[1] is their prefix), at once.
var wipeLocks = redis.NewScript(`local n = 0
for _, k in ipairs(redis.call('KEYS', '*')) do
  if string.sub(k, 1, #ARGV[1]) ~= ARGV[1] then n = n + redis.call('DEL', k) end
end
return n`)

// majority applies fn to three hosts at once and waits for them to serve again.
func (n *nemesis) majority(ctx context.Context, f Fault, fn func(i int) error) (Fault, error) {
	idx := n.pick(3)
	f.Hosts = n.names(idx)
	f.Start = Mono()
	errs := make([]error, len(idx))
	downs := make([]Down, len(idx))
	var wg sync.WaitGroup
	for j, i := range idx {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if errs[j] = fn(i); errs[j] == nil {
				downs[j], errs[j] = n.serving(ctx, i, f.Start)
			}
		}()
	}
	wg.Wait()
	f.Down = downs
	f.End = Mono()
	return f, errors.Join(errs...)
}

// pauseClient asks a worker to stop itself during its next hold (after its fenced read)
// and continues it after twice the TTL: its validity is over and another worker has had
// the lock; its write then carries a stale fence.
func (n *nemesis) pauseClient(ctx context.Context, f Fault) (Fault, error) {
	w := n.workers[n.rng.IntN(len(n.workers))]
	f.Worker, f.Clients = w.id, []int{w.client}
	if err := w.proc.Signal(syscall.SIGUSR1); err != nil {
		return f, fmt.Errorf("worker %d: %w", w.id, err)
	}
	limit := time.Now().Add(time.Minute)
	for !stopped(w.pid) {
		if time.Now().After(limit) {
			return f, fmt.Errorf("worker %d (pid %d) did not stop within a minute of SIGUSR1", w.id, w.pid)
		}
		select {
		case <-w.done:
			return f, fmt.Errorf("worker %d exited", w.id)
		case <-ctx.Done():
			return f, ctx.Err()
		case <-time.After(5 * time.Millisecond):
		}
	}
	f.Start = Mono()
	p := 2 * n.d.TTL
	f.Note = fmt.Sprintf("worker %d (client host %d) stopped for %v while holding", w.id, w.client, p)
	time.Sleep(p)
	err := w.proc.Signal(syscall.SIGCONT)
	f.End = Mono()
	return f, err
}

// stopped says whether pid is in state T (stopped).
func stopped(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	s := string(data)
	i := strings.LastIndexByte(s, ')')
	return i > 0 && i+2 < len(s) && s[i+2] == 'T'
}

// clockSkew restarts master i (cleanly) with its wall clock running 0.9% fast or slow,
// within the 1% drift allowance, for a while, then restarts it with the true clock.
func (n *nemesis) clockSkew(ctx context.Context, f Fault, i int) (Fault, error) {
	rate := 1.009
	if n.rng.IntN(2) == 0 {
		rate = 0.991
	}
	f.Start = Mono()
	if err := n.setClock(ctx, i, 0, rate, false); err != nil {
		return f, err
	}
	d1, err := n.serving(ctx, i, f.Start)
	if err != nil {
		return f, err
	}
	p := n.dur(2*n.d.TTL, 4*n.d.TTL)
	f.Note = fmt.Sprintf("wall clock rate %v for %v", rate, p)
	time.Sleep(p)
	s2 := Mono()
	if err := n.setClock(ctx, i, 0, 1, false); err != nil {
		return f, err
	}
	d2, err := n.serving(ctx, i, s2)
	f.Down = []Down{d1, d2}
	f.End = d2.End
	return f, err
}

// setClock installs the wall-clock shim on host i (LD_PRELOAD drop-in of the server's
// unit) with this offset and rate, or removes it for (0, 1), and restarts the server
// cleanly (its gate starts it at once after a clean stop).
func (n *nemesis) setClock(ctx context.Context, i int, offset time.Duration, rate float64, step bool) error {
	h := n.d.Hosts[i]
	dir := "/etc/systemd/system/" + n.d.Unit + ".d"
	if offset == 0 && rate == 1 && !step {
		if _, err := h.Exec(ctx, "rm", "-f", dir+"/"+clockDropIn); err != nil {
			return err
		}
	} else {
		lib, err := redistest.ClockSkewLibrary()
		if err != nil {
			return err
		}
		so, err := os.ReadFile(lib)
		if err != nil {
			return err
		}
		if _, err := h.Exec(ctx, "sh", "-c", `mkdir -p "$1" && echo "$2" | base64 -d > "$3.tmp" && chmod 0644 "$3.tmp" && mv -f "$3.tmp" "$3"`,
			"sh", shimDir, base64.StdEncoding.EncodeToString(so), shimPath); err != nil {
			return err
		}
		unit := fmt.Sprintf("[Service]\nEnvironment=LD_PRELOAD=%s REDISTEST_CLOCK_OFFSET_NS=%d REDISTEST_CLOCK_RATE=%s\n",
			shimPath, offset.Nanoseconds(), strconv.FormatFloat(rate, 'f', -1, 64))
		if step {
			if err := n.stepClock(ctx, i, 0); err != nil {
				return err
			}
			unit += "Environment=REDISTEST_CLOCK_STEP_FILE=" + stepPath + "\n"
		}
		if err := writeFile(ctx, h, dir+"/"+clockDropIn, unit); err != nil {
			return err
		}
	}
	if _, err := h.Systemctl(ctx, "daemon-reload"); err != nil {
		return err
	}
	_, err := h.Systemctl(ctx, "restart", n.d.Unit)
	return err
}

func writeFile(ctx context.Context, h *hostlab.Host, file, content string) error {
	_, err := h.Exec(ctx, "sh", "-c", `mkdir -p "$(dirname "$1")" && printf '%s' "$2" > "$1"`, "sh", file, content)
	return err
}

// stepClock writes the step file of host i in place (the shim maps it): the wall clock of
// a server started with it moves by offset at once.
func (n *nemesis) stepClock(ctx context.Context, i int, offset time.Duration) error {
	var b strings.Builder
	v := uint64(offset.Nanoseconds())
	for k := 0; k < 8; k++ { // native (little) endian, as printf octal escapes
		fmt.Fprintf(&b, "\\%03o", byte(v>>(8*k)))
	}
	_, err := n.d.Hosts[i].Exec(ctx, "sh", "-c",
		`mkdir -p "$(dirname "$1")" && printf "$2" | dd of="$1" bs=8 count=1 conv=notrunc status=none && chmod 0644 "$1"`,
		"sh", stepPath, b.String())
	return err
}

// breakAssumptions prepares host i for the violation run: the server restarts (cleanly)
// with a wall clock the nemesis can step.
func (n *nemesis) breakAssumptions(ctx context.Context, i int) error {
	if err := n.setClock(ctx, i, 0, 1, true); err != nil {
		return err
	}
	_, err := n.d.WaitServing(ctx, i, 0)
	return err
}
