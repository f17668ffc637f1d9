package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/simhashdb/simhashdb/internal/memlimit"
)

// A command that opens an index keeps its process within the memory it
// may use: without a soft limit the Go collector lets the heap grow to
// about twice what is live, and an index's cache, memtables and
// directories, sized to stay within half that memory, then pass it (a
// memory cgroup kills the process). Unless GOMEMLIMIT is set, one hold a
// process moves the Go heap's soft limit to that memory less the resident
// memory outside the heap; serve narrows it to its own bound while it
// serves.

// memoryFollow is how often a hold asks its bound again: serve's follows
// the index's budget, whose directories grow with the index, and the
// memtables' budget too unless --memtable-size is given.
const memoryFollow = 30 * time.Second

// memorySlack is what the Go heap is kept below the bound less the memory
// outside it: what the heap and C may take between two looks.
const memorySlack = 16 << 20

// memoryWatch is how often a hold measures the memory outside the Go heap
// (C's allocations: Pebble's cache and memtables, glibc's arenas; the
// program's pages) and moves the Go heap's limit by it.
const memoryWatch = 100 * time.Millisecond

// heldLimit is the Go heap's soft limit that keeps the process within
// bound when outside bytes of it are not the Go runtime's: the collector
// then works harder as C's memory grows, rather than the process pass the
// bound. It is never below memoryOther.
func heldLimit(bound, outside int64) int64 {
	return max((bound-outside-memorySlack)&^(1<<20-1), memoryOther) // whole MiB: not moved at every look
}

// outsideGo is the process's resident memory that the Go runtime did not
// map: what the soft limit does not see. It reads /proc/self/statm (0
// where there is none, and the limit stays as budgeted).
func outsideGo(samples []metrics.Sample) int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, err := strconv.ParseInt(f[1], 10, 64)
	if err != nil {
		return 0
	}
	metrics.Read(samples)
	goMapped := int64(samples[0].Value.Uint64()) - int64(samples[1].Value.Uint64())
	return max(pages*int64(os.Getpagesize())-goMapped, 0)
}

// memoryTarget is what a hold keeps the process within: bound, asked every
// memoryFollow, and blind, the Go heap's limit for a bound where the
// memory outside the heap cannot be measured.
type memoryTarget struct {
	bound func() int64
	blind func(bound int64) int64
}

// processShare is the part of the memory the process may use that its
// hold keeps it within: in a memory cgroup the kernel counts the page
// cache too, and a flush's written pages must be written back before they
// can be reclaimed.
const processShare = 15.0 / 16

// heldBound is what a process that may use limit is held within.
func heldBound(limit int64) int64 { return int64(float64(limit) * processShare) }

// processTarget is the memory the process may use, limit, less what
// processShare leaves.
func processTarget(limit int64) memoryTarget {
	return memoryTarget{
		bound: func() int64 { return heldBound(limit) },
		blind: func(bound int64) int64 { return max(bound-bound/8-memoryOutside, memoryOther) },
	}
}

// memoryHold moves the Go runtime's soft memory limit to its target's
// bound less the memory outside the Go heap, every memoryWatch, until
// stopped.
type memoryHold struct {
	mu      sync.Mutex
	target  memoryTarget
	bound   int64     // target.bound(), as of asked
	asked   time.Time // when the target was last asked its bound
	limit   int64     // the limit set last
	samples []metrics.Sample
	old     int64 // the limit before the hold
	done    chan struct{}
	stopped chan struct{}
}

// startHold starts holding the process within t, and sets the limit now.
func startHold(t memoryTarget) *memoryHold {
	h := &memoryHold{target: t, old: debug.SetMemoryLimit(-1), done: make(chan struct{}), stopped: make(chan struct{}),
		samples: []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}}
	h.mu.Lock()
	h.ask()
	h.mu.Unlock()
	go h.run()
	return h
}

// ask asks the target its bound and sets the limit by it; h.mu is held.
func (h *memoryHold) ask() {
	h.bound, h.asked = h.target.bound(), time.Now()
	h.apply()
}

// apply sets the limit for the bound and what lies outside the heap now;
// h.mu is held.
func (h *memoryHold) apply() {
	l := h.target.blind(h.bound)
	if outside := outsideGo(h.samples); outside > 0 {
		l = heldLimit(h.bound, outside)
	}
	if l != h.limit {
		h.limit = l
		debug.SetMemoryLimit(l)
	}
}

func (h *memoryHold) run() {
	defer close(h.stopped)
	tick := time.NewTicker(memoryWatch)
	defer tick.Stop()
	for {
		select {
		case <-h.done:
			return
		case <-tick.C:
			h.mu.Lock()
			if time.Since(h.asked) >= memoryFollow {
				h.ask()
			} else {
				h.apply()
			}
			h.mu.Unlock()
		}
	}
}

// narrow holds the process within t instead, until the function it
// returns puts back the target before.
func (h *memoryHold) narrow(t memoryTarget) (restore func()) {
	h.mu.Lock()
	defer h.mu.Unlock()
	before := h.target
	h.target = t
	h.ask()
	return func() {
		h.mu.Lock()
		defer h.mu.Unlock()
		h.target = before
		h.ask()
	}
}

// stop ends the hold and puts back the limit it found.
func (h *memoryHold) stop() {
	close(h.done)
	<-h.stopped
	debug.SetMemoryLimit(h.old)
}

// process is the process's hold, if started, and the memory it holds the
// process within.
var process struct {
	sync.Mutex
	started bool
	hold    *memoryHold
	limit   int64
}

// holdProcessMemory starts the process's hold, once, unless GOMEMLIMIT is
// set or the memory the process may use is unknown: a command calls it
// once its index is open, whose defaults have then read that memory
// before the hold lowers the Go runtime's limit.
func holdProcessMemory() {
	process.Lock()
	defer process.Unlock()
	if process.started {
		return
	}
	process.started = true
	if os.Getenv("GOMEMLIMIT") != "" {
		return
	}
	if process.limit = memlimit.Of(""); process.limit > 0 {
		process.hold = startHold(processTarget(process.limit))
	}
}

// processHold is the process's hold, nil if it has none, and the memory
// it holds the process within.
func processHold() (*memoryHold, int64) {
	process.Lock()
	defer process.Unlock()
	return process.hold, process.limit
}
