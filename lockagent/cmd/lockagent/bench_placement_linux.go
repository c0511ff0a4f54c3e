//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// cpuSplit is where --placement split puts the processes: the masters it spawned on one
// part of this process's CPUs, the bench itself and its workers on the rest.
type cpuSplit struct {
	masters, clients unix.CPUSet
	mastersList      string // the masters' CPUs, as "2-3"
	clientsList      string
}

// splitCPUs divides the CPUs this process may run on between the bench with its workers
// and the masters (see divideCPUs). It needs two CPUs at least.
func splitCPUs() (*cpuSplit, error) {
	cpus, err := ownCPUs()
	if err != nil {
		return nil, err
	}
	if len(cpus) < 2 {
		return nil, fmt.Errorf("this process may run on %d CPU only; split needs 2 or more", len(cpus))
	}
	s := &cpuSplit{}
	clients, masters := divideCPUs(cpus, siblingsOf)
	for _, c := range clients {
		s.clients.Set(c)
	}
	for _, c := range masters {
		s.masters.Set(c)
	}
	s.clientsList, s.mastersList = cpuList(clients), cpuList(masters)
	return s, nil
}

// ownCPUs lists the CPUs the calling thread may run on, ascending: before any pinning,
// the process's.
func ownCPUs() ([]int, error) {
	var all unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		return nil, fmt.Errorf("reading the CPUs this process may run on: %w", err)
	}
	var cpus []int
	for i := 0; i < len(all)*64; i++ {
		if all.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus, nil
}

// ownCPUList is ownCPUs as the kernel lists them ("0-3"), "" when it cannot be read.
func ownCPUList() string {
	cpus, err := ownCPUs()
	if err != nil || len(cpus) == 0 {
		return ""
	}
	return cpuList(cpus)
}

// divideCPUs gives the bench and its workers the first half of the cores of cpus (rounded
// up; cores in the order of their lowest CPU) and the masters the rest: the hardware
// threads of one core (the CPUs with the same siblings) share its caches and execution
// units, so a core is never divided between the two sides. On a single core, its CPUs
// are divided instead: the first half (rounded up) for the bench.
func divideCPUs(cpus []int, siblings func(cpu int) string) (clients, masters []int) {
	var cores [][]int
	index := map[string]int{}
	for _, c := range cpus {
		key := siblings(c)
		if key == "" {
			key = "cpu" + strconv.Itoa(c) // unknown: a core of its own
		}
		i, ok := index[key]
		if !ok {
			i = len(cores)
			index[key] = i
			cores = append(cores, nil)
		}
		cores[i] = append(cores[i], c)
	}
	if len(cores) < 2 {
		clients = cpus[:(len(cpus)+1)/2]
		return clients, cpus[len(clients):]
	}
	half := (len(cores) + 1) / 2
	for i, core := range cores {
		if i < half {
			clients = append(clients, core...)
		} else {
			masters = append(masters, core...)
		}
	}
	slices.Sort(clients)
	slices.Sort(masters)
	return clients, masters
}

// siblingsOf is the kernel's list of the hardware threads of cpu's core, "" when unknown.
func siblingsOf(cpu int) string {
	b, err := os.ReadFile(fmt.Sprintf("/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", cpu))
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// cpuList writes CPU numbers (ascending) the way the kernel lists them: "0", "0-3", "0,2".
func cpuList(cpus []int) string {
	out := ""
	for i := 0; i < len(cpus); {
		j := i
		for j+1 < len(cpus) && cpus[j+1] == cpus[j]+1 {
			j++
		}
		if out != "" {
			out += ","
		}
		out += strconv.Itoa(cpus[i])
		if j > i {
			out += "-" + strconv.Itoa(cpus[j])
		}
		i = j + 1
	}
	return out
}

// pinMaster puts every thread of a spawned master on the masters' CPUs.
func (s *cpuSplit) pinMaster(pid int) error { return pinProcess(pid, &s.masters) }

// pinBench puts this process on the clients' CPUs; the workers it starts afterwards
// inherit them. GOMAXPROCS is set to what it is first: Go would otherwise lower it to
// the CPUs left, and the bench's clients keep the Go runtime they have with every CPU.
func (s *cpuSplit) pinBench() error {
	runtime.GOMAXPROCS(runtime.GOMAXPROCS(0))
	return pinProcess(os.Getpid(), &s.clients)
}

// pinProcess restricts every thread of process pid to set. A thread takes its affinity
// from the thread that creates it, so one started while the threads are being pinned can
// still carry the old one: the threads are read again until a pass finds every one
// pinned already.
func pinProcess(pid int, set *unix.CPUSet) error {
	dir := fmt.Sprintf("/proc/%d/task", pid)
	for pass := 0; pass < 10; pass++ {
		tasks, err := os.ReadDir(dir)
		if err != nil {
			return fmt.Errorf("pinning pid %d: %w", pid, err)
		}
		moved := 0
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			var cur unix.CPUSet
			if err := unix.SchedGetaffinity(tid, &cur); err != nil {
				if errors.Is(err, unix.ESRCH) {
					continue // the thread exited meanwhile
				}
				return fmt.Errorf("pinning pid %d: reading thread %d's CPUs: %w", pid, tid, err)
			}
			if within(&cur, set) {
				continue // pinned (the kernel may keep fewer CPUs than asked, never others)
			}
			if err := unix.SchedSetaffinity(tid, set); err != nil {
				if errors.Is(err, unix.ESRCH) {
					continue
				}
				return fmt.Errorf("pinning pid %d: thread %d: %w", pid, tid, err)
			}
			moved++
		}
		if moved == 0 {
			return nil
		}
	}
	return fmt.Errorf("pinning pid %d: after 10 passes some of its threads still ran outside the CPUs asked", pid)
}

// within says whether every CPU of cur is in set.
func within(cur, set *unix.CPUSet) bool {
	for i := range cur {
		if cur[i]&^set[i] != 0 {
			return false
		}
	}
	return true
}
