//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestCPUList(t *testing.T) {
	for _, tt := range []struct {
		cpus []int
		want string
	}{
		{[]int{0}, "0"},
		{[]int{1}, "1"},
		{[]int{0, 1, 2, 3}, "0-3"},
		{[]int{0, 2}, "0,2"},
		{[]int{0, 1, 3, 5, 6, 7}, "0-1,3,5-7"},
	} {
		if got := cpuList(tt.cpus); got != tt.want {
			t.Errorf("cpuList(%v) = %q, want %q", tt.cpus, got, tt.want)
		}
	}
}

func TestDivideCPUs(t *testing.T) {
	type want struct{ clients, masters []int }
	for _, tt := range []struct {
		name     string
		cpus     []int
		siblings map[int]string
		want     want
	}{
		{"two cores", []int{0, 1}, map[int]string{0: "0", 1: "1"}, want{[]int{0}, []int{1}}},
		{"three cores: the clients get the odd one", []int{0, 1, 2}, map[int]string{0: "0", 1: "1", 2: "2"}, want{[]int{0, 1}, []int{2}}},
		// Linux often numbers a core's second thread in the upper half: halving the CPUs
		// would put both sides on every core.
		{"two cores of two threads", []int{0, 1, 2, 3}, map[int]string{0: "0,2", 1: "1,3", 2: "0,2", 3: "1,3"}, want{[]int{0, 2}, []int{1, 3}}},
		{"one core of two threads", []int{0, 1}, map[int]string{0: "0-1", 1: "0-1"}, want{[]int{0}, []int{1}}},
		{"topology unknown", []int{0, 1, 2, 3}, map[int]string{}, want{[]int{0, 1}, []int{2, 3}}},
		{"a narrowed set", []int{2, 5}, map[int]string{2: "2", 5: "5"}, want{[]int{2}, []int{5}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			clients, masters := divideCPUs(tt.cpus, func(c int) string { return tt.siblings[c] })
			if !slices.Equal(clients, tt.want.clients) || !slices.Equal(masters, tt.want.masters) {
				t.Errorf("clients %v, masters %v; want %v, %v", clients, masters, tt.want.clients, tt.want.masters)
			}
		})
	}
}

// oneCPUEnv makes the test binary run choosePlacement on one CPU (the number it holds)
// and print what it chose as JSON (see the init below): the CPUs are narrowed in a process
// of its own, since Go keeps a narrowed main thread.
const oneCPUEnv = "LOCKAGENT_TEST_ONE_CPU"

// oneCPUResult is what that process prints.
type oneCPUResult struct {
	DefaultSplits, ExplicitSplits bool
	Note, Err                     string
}

func init() {
	cpu, err := strconv.Atoi(os.Getenv(oneCPUEnv))
	if err != nil {
		return
	}
	runtime.LockOSThread() // init runs on the main thread: it stays narrowed
	var one unix.CPUSet
	one.Set(cpu)
	if err := unix.SchedSetaffinity(0, &one); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	var r oneCPUResult
	var note strings.Builder
	dflt, _ := choosePlacement("", 3, true, &note)
	explicit, err := choosePlacement("split", 3, true, io.Discard)
	r.DefaultSplits, r.ExplicitSplits, r.Note = dflt != nil, explicit != nil, note.String()
	if err != nil {
		r.Err = err.Error()
	}
	_ = json.NewEncoder(os.Stdout).Encode(r)
	os.Exit(0)
}

// TestChoosePlacementOnOneCPU: where the bench may run on one CPU only, split by default
// falls back to shared with a note, and an explicit --placement split is refused with the
// fix.
func TestChoosePlacementOnOneCPU(t *testing.T) {
	own := allowedCPUs(t, os.Getpid())
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), oneCPUEnv+"="+strconv.Itoa(own[0]))
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var r oneCPUResult
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if r.DefaultSplits || !strings.Contains(r.Note, "placement shared (this process may run on 1 CPU only") {
		t.Errorf("default on one CPU: split %v, note %q; want shared, with a note saying why", r.DefaultSplits, r.Note)
	}
	if r.ExplicitSplits || !strings.Contains(r.Err, "--placement split: this process may run on 1 CPU only") ||
		!strings.Contains(r.Err, "use --placement shared") {
		t.Errorf("--placement split on one CPU: split %v, error %q; want an error naming the flag and the fix", r.ExplicitSplits, r.Err)
	}
	// The control: with every CPU (two or more), the default splits.
	if len(own) >= 2 {
		if split, err := choosePlacement("", 3, true, io.Discard); split == nil || err != nil {
			t.Errorf("default on %d CPUs: %v, %v; want a split", len(own), split, err)
		}
	}
}

// threadHolderEnv makes the test binary a process with threads of its own (see the
// init below): it starts a thread per line it reads on stdin, answering "ok" each time,
// so that a test can add threads to it after pinning it.
const threadHolderEnv = "LOCKAGENT_TEST_THREAD_HOLDER"

func init() {
	if os.Getenv(threadHolderEnv) != "1" {
		return
	}
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		started := make(chan struct{})
		go func() {
			runtime.LockOSThread() // never unlocked: the goroutine keeps a thread of its own
			close(started)
			select {}
		}()
		<-started
		fmt.Println("ok")
	}
	os.Exit(0)
}

// TestPinProcessPinsEveryThread: pinProcess moves every thread of a running process,
// and the threads it starts afterwards are pinned too. Not checked: pinProcess reads the
// threads again until none moved, for a thread started by a thread not yet pinned while
// it ran; no test here makes that happen on purpose.
func TestPinProcessPinsEveryThread(t *testing.T) {
	own := allowedCPUs(t, os.Getpid())
	if len(own) < 2 {
		t.Skipf("this process may run on %d CPU: pinning to one of them would change nothing", len(own))
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), threadHolderEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	replies := bufio.NewScanner(stdout)
	addThread := func() {
		t.Helper()
		if _, err := fmt.Fprintln(stdin, "thread"); err != nil {
			t.Fatal(err)
		}
		if !replies.Scan() {
			t.Fatalf("the thread holder did not answer: %v", replies.Err())
		}
	}
	for i := 0; i < 3; i++ {
		addThread()
	}
	pid := cmd.Process.Pid
	// The control: before pinning, its threads may run on every CPU of this process.
	if got := threadCPUs(t, pid); len(got) != 1 || !slices.Equal(parseCPUList(t, got[0]), own) {
		t.Fatalf("before pinning, its threads' CPUs are %v, want all of %v", got, own)
	}
	last := own[len(own)-1]
	var set unix.CPUSet
	set.Set(last)
	if err := pinProcess(pid, &set); err != nil {
		t.Fatal(err)
	}
	before := len(threadIDs(t, pid))
	for i := 0; i < 3; i++ {
		addThread()
	}
	if after := len(threadIDs(t, pid)); after <= before {
		t.Fatalf("%d threads after adding some, %d before: the check below would see no new thread", after, before)
	}
	want := strconv.Itoa(last)
	if got := threadCPUs(t, pid); !slices.Equal(got, []string{want}) {
		t.Errorf("its threads' CPUs after pinning: %v, want every one on CPU %s only", got, want)
	}
}

// TestBenchPlacement: with --placement split (the default here) the cross-process
// scenario runs the spawned masters on CPUs the bench and its workers do not, and the
// workers keep the bench's GOMAXPROCS; with shared every one may run on every CPU. Before
// that scenario (the in-process ones) every process may run on every CPU either way. The
// processes are read from /proc while the bench runs.
func TestBenchPlacement(t *testing.T) {
	own := allowedCPUs(t, os.Getpid())
	if len(own) < 2 {
		t.Skipf("this process may run on %d CPU: split needs 2", len(own))
	}
	ownList := cpuList(own)
	for _, placement := range []string{"split", "shared"} {
		t.Run(placement, func(t *testing.T) {
			// --log-level info: the bench logs each scenario as it starts (see watchChildren).
			args := []string{"bench", "--log-level", "info", "--spawn", "3", "--implementations", "lockagent", "--iterations", "5", "--rounds", "1",
				"--goroutines", "2", "--contenders", "2", "--processes", "2", "--duration", "500ms"}
			if placement == "shared" {
				args = append(args, "--placement", "shared")
			}
			p := startAgent(t, nil, args...)
			seen := watchChildren(t, p)
			if code := p.wait(t); code != 0 {
				t.Fatalf("exit %d; stderr:\n%s", code, p.stderr.String())
			}
			masters, workers := seen.cpus["redis-server"], seen.cpus[filepath.Base(lockagentBin)]
			if len(masters) == 0 || len(workers) == 0 {
				t.Fatalf("saw masters on %v and workers on %v while the bench ran: want both seen", masters, workers)
			}
			// Either way the in-process scenarios run every process on every CPU, the last of
			// them (contention) too: some look begun once it was logged saw that (later looks
			// may see the cross-process scenario's).
			if seen.contentionLooks == 0 {
				t.Fatalf("no look at the processes once the in-process contention scenario had started")
			}
			for who, got := range map[string][]string{"masters": seen.mastersInContention, "bench": seen.benchInContention} {
				if !slices.Contains(got, ownList) {
					t.Errorf("%s on CPUs %v once the in-process contention scenario had started, want all of this machine's %s", who, got, ownList)
				}
			}
			if placement == "shared" {
				for who, got := range map[string][]string{"masters": masters, "workers": workers, "bench": seen.bench} {
					if !slices.Equal(got, []string{ownList}) {
						t.Errorf("%s on CPUs %v, want every one on all of this machine's %s", who, got, ownList)
					}
				}
				if _, set := os.LookupEnv("GOMAXPROCS"); !set && len(seen.workerGOMAXPROCS) > 0 {
					t.Errorf("workers ran with %v: shared placement leaves GOMAXPROCS to Go", seen.workerGOMAXPROCS)
				}
				if line := "\nplacement shared: every process on CPU " + ownList + ".\n"; !strings.Contains(p.stdout.String(), line) {
					t.Errorf("the table does not say the placement was shared:\n%s", p.stdout.String())
				}
				return
			}
			if len(masters) != 1 || len(workers) != 1 || !slices.Equal(seen.bench, workers) {
				t.Fatalf("masters on %v, workers on %v, the bench on %v: want one CPU list for the masters, another for the workers and the bench", masters, workers, seen.bench)
			}
			// Two sides that do not overlap and make up every CPU, as divideCPUs gives them
			// (TestDivideCPUs checks it): by whole cores, the bench's first.
			m, w := parseCPUList(t, masters[0]), parseCPUList(t, workers[0])
			wantW, wantM := divideCPUs(own, siblingsOf)
			if both := slices.Sorted(slices.Values(slices.Concat(w, m))); !slices.Equal(both, own) || !slices.Equal(w, wantW) || !slices.Equal(m, wantM) {
				t.Errorf("workers on %v and masters on %v: want %v and %v, every one of %v once", w, m, wantW, wantM, own)
			}
			// The bench's own GOMAXPROCS, as the table states it (the test's own may differ:
			// go test -cpu sets it).
			line := fmt.Sprintf("\nplacement split: the 3 masters on CPU %s, the bench and its workers on CPU %s (GOMAXPROCS ", masters[0], workers[0])
			_, rest, ok := strings.Cut(p.stdout.String(), line)
			gomaxprocs, _, _ := strings.Cut(rest, ")")
			if n, err := strconv.Atoi(gomaxprocs); !ok || err != nil || n < 1 {
				t.Fatalf("the table lacks %q followed by a number:\n%s", line, p.stdout.String())
			}
			if len(seen.workerGOMAXPROCS) == 0 {
				t.Errorf("no worker had GOMAXPROCS set, want the bench's %s", gomaxprocs)
			}
			for _, env := range seen.workerGOMAXPROCS {
				if env != "GOMAXPROCS="+gomaxprocs {
					t.Errorf("a worker ran with %q, want the bench's GOMAXPROCS=%s (with every CPU)", env, gomaxprocs)
				}
			}
		})
	}
}

// childrenSeen is what watchChildren saw: the CPU lists of the threads of every child
// by its name (every list any thread had at any time, for the workers; the last look,
// for the masters and the bench, which are pinned when the cross-process scenario
// starts); every list of the masters and of the bench in the looks begun once the bench
// had logged its in-process contention scenario (the last before the cross-process one),
// and how many such looks there were (they include looks after it); the workers'
// GOMAXPROCS setting.
type childrenSeen struct {
	cpus                                   map[string][]string
	bench                                  []string
	benchInContention, mastersInContention []string
	contentionLooks                        int
	workerGOMAXPROCS                       []string
}

// addLists adds lists to the sorted set of lists to.
func addLists(to *[]string, lists []string) {
	all := append(*to, lists...)
	slices.Sort(all)
	*to = slices.Compact(all)
}

// watchChildren reads p's children and their threads' CPUs from /proc until p exits. A
// worker is a child whose command is bench-worker: a child between fork and exec
// carries the bench's name whatever it becomes.
func watchChildren(t *testing.T, p *agentProc) *childrenSeen {
	t.Helper()
	workerName := filepath.Base(lockagentBin)
	s := &childrenSeen{cpus: map[string][]string{}}
	lastMasters := map[int][]string{}
	give := time.After(hangGuard)
	for {
		select {
		case <-give:
			t.Fatalf("lockagent %v did not exit; stderr:\n%s", p.cmd.Args[1:], p.stderr.String())
		case <-p.done:
			var masters []string
			for _, l := range lastMasters {
				masters = append(masters, l...)
			}
			slices.Sort(masters)
			s.cpus["redis-server"] = slices.Compact(masters)
			return s
		default:
		}
		contention := strings.Contains(p.stderr.String(), `"bench: contention"`)
		if contention {
			s.contentionLooks++
		}
		if got := threadCPUsIfAlive(p.cmd.Process.Pid); got != nil {
			s.bench = got
			if contention {
				addLists(&s.benchInContention, got)
			}
		}
		for _, c := range childrenOfPid(p.cmd.Process.Pid) {
			got := threadCPUsIfAlive(c.pid)
			if got == nil {
				continue
			}
			switch c.name {
			case "redis-server":
				lastMasters[c.pid] = got
				if contention {
					addLists(&s.mastersInContention, got)
				}
			case workerName:
				if args, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", c.pid)); err != nil ||
					!strings.Contains(string(args), "\x00"+benchWorkerCommand+"\x00") {
					continue
				}
				workers := s.cpus[workerName]
				addLists(&workers, got)
				s.cpus[workerName] = workers
				if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", c.pid)); err == nil {
					for _, kv := range strings.Split(string(env), "\x00") {
						if strings.HasPrefix(kv, "GOMAXPROCS=") {
							s.workerGOMAXPROCS = append(s.workerGOMAXPROCS, kv)
						}
					}
				}
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

type child struct {
	pid  int
	name string
}

// childrenOfPid lists the live processes below pid (descendants, the command's own
// /proc reader), each with its name.
func childrenOfPid(pid int) []child {
	var out []child
	for _, c := range descendants(pid) {
		comm, err := os.ReadFile(fmt.Sprintf("/proc/%d/comm", c))
		if err != nil {
			continue // gone meanwhile
		}
		out = append(out, child{pid: c, name: strings.TrimSpace(string(comm))})
	}
	return out
}

// threadIDs lists the threads of pid.
func threadIDs(t *testing.T, pid int) []string {
	t.Helper()
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, task := range tasks {
		ids = append(ids, task.Name())
	}
	return ids
}

// threadCPUs returns the distinct Cpus_allowed_list of pid's threads, sorted.
func threadCPUs(t *testing.T, pid int) []string {
	t.Helper()
	got := threadCPUsIfAlive(pid)
	if got == nil {
		t.Fatalf("cannot read the threads of pid %d", pid)
	}
	return got
}

// threadCPUsIfAlive is threadCPUs, nil when the process is gone (or has no thread left).
func threadCPUsIfAlive(pid int) []string {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	tasks, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var lists []string
	for _, task := range tasks {
		status, err := os.ReadFile(filepath.Join(dir, task.Name(), "status"))
		if err != nil {
			continue // the thread exited meanwhile
		}
		for _, l := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
				lists = append(lists, strings.TrimSpace(v))
			}
		}
	}
	slices.Sort(lists)
	return slices.Compact(lists)
}

// allowedCPUs is the CPUs pid may run on, ascending, from /proc.
func allowedCPUs(t *testing.T, pid int) []int {
	t.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(l, "Cpus_allowed_list:"); ok {
			return parseCPUList(t, strings.TrimSpace(v))
		}
	}
	t.Fatalf("no Cpus_allowed_list in /proc/%d/status", pid)
	return nil
}

// parseCPUList reads a kernel CPU list ("0-3,5").
func parseCPUList(t *testing.T, s string) []int {
	t.Helper()
	var cpus []int
	for _, part := range strings.Split(s, ",") {
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			t.Fatalf("CPU list %q: %v", s, err)
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				t.Fatalf("CPU list %q: %v", s, err)
			}
		}
		for c := a; c <= b; c++ {
			cpus = append(cpus, c)
		}
	}
	return cpus
}
