package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/simhashdb/simhashdb/engine"
)

// memoryOther is what serve's memory bound allows besides the batch bodies
// in flight, the cache, the memtables and the index's directories: a
// flush's merged blocks, connections, answers being written, the Go
// runtime.
const memoryOther = 64 << 20

// memoryOutside is the part of memoryOther outside the Go heap: the
// program's own pages in memory, Pebble's memtables (kept outside the heap
// as its cache is).
const memoryOutside = 32 << 20

// memoryFollow is how often serve looks at the index's memory budget again:
// the directories grow with the index, and the memtables' budget too
// unless --memtable-size is given.
const memoryFollow = 30 * time.Second

// memoryBound is the memory serve keeps within: the batch bodies in flight,
// the index's cache, memtables and directories, and memoryOther.
// The sum stops at math.MaxInt64: flags of exabytes must not wrap it into
// a small limit.
func memoryBound(inflight int64, b engine.MemoryBudget) int64 {
	sum := int64(0)
	for _, n := range []int64{inflight, b.Cache, b.Memtables, b.Directories, memoryOther} {
		if n > math.MaxInt64-sum {
			return math.MaxInt64
		}
		sum += n
	}
	return sum
}

// goMemoryLimit is the Go runtime's soft limit for a bound, before the
// memory outside the Go heap is measured: less Pebble's block cache (kept
// outside the heap where cgo is enabled; where it is not, the heap holds
// it and collects a little sooner) and memoryOutside.
func goMemoryLimit(bound int64, b engine.MemoryBudget) int64 {
	return max(bound-b.PebbleCache-memoryOutside, memoryOther)
}

// memorySlack is what the Go heap is kept below the bound less the memory
// outside it: what the heap and C may take between two looks.
const memorySlack = 16 << 20

// memoryWatch is how often serve measures the memory outside the Go heap
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

// holdMemory keeps the process within serve's memory bound: without a
// limit the collector lets the heap grow to twice what is live, and the
// bound holds only what is live. It sets the runtime's soft memory limit
// unless GOMEMLIMIT set one, and until ctx is done moves it as the memory
// outside the Go heap and the index's budget change; it returns a
// function that puts the limit back as it was.
func holdMemory(ctx context.Context, db *engine.DB, inflight int64, stderr io.Writer) (restore func()) {
	b := db.MemoryBudget()
	bound := memoryBound(inflight, b)
	if os.Getenv("GOMEMLIMIT") != "" {
		fmt.Fprintf(stderr, "%s serve: memory: %s in flight, %s of cache, %s of memtables, %s of directories and %s besides; GOMEMLIMIT is set and kept\n",
			programName, sizeText(inflight), sizeText(b.Cache), sizeText(b.Memtables), sizeText(b.Directories), sizeText(memoryOther))
		return func() {}
	}
	limit := goMemoryLimit(bound, b)
	old := debug.SetMemoryLimit(limit)
	fmt.Fprintf(stderr, "%s serve: memory bound %s: %s in flight, %s of cache, %s of memtables, %s of directories and %s besides (GOMEMLIMIT overrides)\n",
		programName, sizeText(bound), sizeText(inflight), sizeText(b.Cache), sizeText(b.Memtables), sizeText(b.Directories), sizeText(memoryOther))
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(memoryWatch)
		defer tick.Stop()
		samples := []metrics.Sample{{Name: "/memory/classes/total:bytes"}, {Name: "/memory/classes/heap/released:bytes"}}
		followed := time.Now()
		for {
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-tick.C:
				if time.Since(followed) >= memoryFollow {
					bound = memoryBound(inflight, db.MemoryBudget())
					followed = time.Now()
				}
				l := limit
				if outside := outsideGo(samples); outside > 0 {
					l = heldLimit(bound, outside)
				}
				if l != limit {
					limit = l
					debug.SetMemoryLimit(limit)
				}
			}
		}
	}()
	return func() {
		close(done)
		<-stopped
		debug.SetMemoryLimit(old)
	}
}
