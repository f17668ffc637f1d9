// Package memhold keeps a process within the memory it may use by moving
// the Go runtime's soft memory limit: without one the collector lets the
// heap grow to about twice what is live, and a memory cgroup kills a
// process whose live memory is sized to stay within half of it. A hold
// sets the limit to its bound less the resident memory outside the Go
// heap (Pebble's cache and memtables where cgo allocates them, the
// program's pages), and follows both.
package memhold

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

// follow is how often a hold asks its bound again: a server's may follow
// its index's budget, whose directories grow with the index.
const follow = 30 * time.Second

// Slack is what the Go heap is kept below the bound less the memory
// outside it: what the heap and C may take between two looks.
const Slack = 16 << 20

// Other is the least a hold sets the Go heap's limit to, and what a
// bound allows besides what its owner budgets (a flush's merged blocks,
// connections, answers being written, the Go runtime).
const Other = 64 << 20

// Outside is the part of Other outside the Go heap, where it cannot be
// measured: the program's own pages in memory, Pebble's memtables (kept
// outside the heap as its cache is).
const Outside = 32 << 20

// watch is how often a hold measures the memory outside the Go heap
// (C's allocations: Pebble's cache and memtables, glibc's arenas; the
// program's pages) and moves the Go heap's limit by it.
const watch = 100 * time.Millisecond

// HeldLimit is the Go heap's soft limit that keeps the process within
// bound when outside bytes of it are not the Go runtime's: the collector
// then works harder as C's memory grows, rather than the process pass the
// bound. It is never below Other.
func HeldLimit(bound, outside int64) int64 {
	return max((bound-outside-Slack)&^(1<<20-1), Other) // whole MiB: not moved at every look
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

// Target is what a hold keeps the process within: Bound, asked every 30
// seconds, and Blind, the Go heap's limit for a bound where the memory
// outside the heap cannot be measured.
type Target struct {
	Bound func() int64
	Blind func(bound int64) int64
}

// ProcessShare is the part of the memory the process may use that its
// hold keeps it within: in a memory cgroup the kernel counts the page
// cache too, and a flush's written pages must be written back before they
// can be reclaimed.
const ProcessShare = 15.0 / 16

// HeldBound is what a process that may use limit is held within.
func HeldBound(limit int64) int64 { return int64(float64(limit) * ProcessShare) }

// ProcessTarget is the memory the process may use, limit, less what
// ProcessShare leaves.
func ProcessTarget(limit int64) Target {
	return Target{
		Bound: func() int64 { return HeldBound(limit) },
		Blind: func(bound int64) int64 { return max(bound-bound/8-Outside, Other) },
	}
}

// Hold moves the Go runtime's soft memory limit to its target's bound
// less the memory outside the Go heap, every tenth of a second, until
// stopped.
type Hold struct {
	mu      sync.Mutex
	target  Target
	bound   int64     // target.bound(), as of asked
	asked   time.Time // when the target was last asked its bound
	limit   int64     // the limit set last
	samples []metrics.Sample
	old     int64 // the limit before the hold
	done    chan struct{}
	stopped chan struct{}
}

// Start starts holding the process within t, and sets the limit now.
func Start(t Target) *Hold {
	h := &Hold{target: t, old: debug.SetMemoryLimit(-1), done: make(chan struct{}), stopped: make(chan struct{}),
		samples: []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}}
	h.mu.Lock()
	h.ask()
	h.mu.Unlock()
	go h.run()
	return h
}

// ask asks the target its bound and sets the limit by it; h.mu is held.
func (h *Hold) ask() {
	h.bound, h.asked = h.target.Bound(), time.Now()
	h.apply()
}

// apply sets the limit for the bound and what lies outside the heap now;
// h.mu is held.
func (h *Hold) apply() {
	l := h.target.Blind(h.bound)
	if outside := outsideGo(h.samples); outside > 0 {
		l = HeldLimit(h.bound, outside)
	}
	if l != h.limit {
		h.limit = l
		debug.SetMemoryLimit(l)
	}
}

func (h *Hold) run() {
	defer close(h.stopped)
	tick := time.NewTicker(watch)
	defer tick.Stop()
	for {
		select {
		case <-h.done:
			return
		case <-tick.C:
			h.mu.Lock()
			if time.Since(h.asked) >= follow {
				h.ask()
			} else {
				h.apply()
			}
			h.mu.Unlock()
		}
	}
}

// Narrow holds the process within t instead, until the function it
// returns puts back the target before.
func (h *Hold) Narrow(t Target) (restore func()) {
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

// Stop ends the hold and puts back the limit it found.
func (h *Hold) Stop() {
	close(h.done)
	<-h.stopped
	debug.SetMemoryLimit(h.old)
}

// process is the process's hold, if started, and the memory it holds the
// process within.
var process struct {
	sync.Mutex
	started bool
	hold    *Hold
	limit   int64
}

// HoldProcess starts the process's hold within ProcessTarget of the
// memory it may use (memlimit.Of), once, unless GOMEMLIMIT is set or that
// memory is unknown. A program that opens an index calls it once the
// index is open, whose defaults have then read that memory before the
// hold lowers the Go runtime's limit.
func HoldProcess() {
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
		process.hold = Start(ProcessTarget(process.limit))
	}
}

// Process is the process's hold (HoldProcess), nil if it has none, and
// the memory the process may use, a share of which it holds the process
// within (HeldBound).
func Process() (*Hold, int64) {
	process.Lock()
	defer process.Unlock()
	return process.hold, process.limit
}
