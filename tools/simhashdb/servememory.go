package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"runtime/debug"
	"time"

	"github.com/simhashdb/simhashdb/engine"
)

// memoryOther is what serve's memory bound allows besides the batch bodies
// in flight, the cache and the memtables: a flush's merged blocks,
// connections, answers being written, the Go runtime.
const memoryOther = 64 << 20

// memoryOutside is the part of memoryOther outside the Go heap: the
// program's own pages in memory, Pebble's memtables (kept outside the heap
// as its cache is).
const memoryOutside = 32 << 20

// memoryFollow is how often serve looks at the index's memory budget again:
// the memtables' budget grows with the index unless --memtable-size is
// given.
const memoryFollow = 30 * time.Second

// memoryBound is the memory serve keeps within: the batch bodies in flight,
// the index's cache and memtables, and memoryOther.
// The sum stops at math.MaxInt64: flags of exabytes must not wrap it into
// a small limit.
func memoryBound(inflight int64, b engine.MemoryBudget) int64 {
	sum := int64(0)
	for _, n := range []int64{inflight, b.Cache, b.Memtables, memoryOther} {
		if n > math.MaxInt64-sum {
			return math.MaxInt64
		}
		sum += n
	}
	return sum
}

// goMemoryLimit is the Go runtime's soft limit for a bound: less what is
// not Go heap, Pebble's block cache (kept outside the heap where cgo is
// enabled; where it is not, the heap holds it and collects a little
// sooner) and memoryOutside.
func goMemoryLimit(bound int64, b engine.MemoryBudget) int64 {
	return max(bound-b.PebbleCache-memoryOutside, memoryOther)
}

// holdMemory keeps the Go heap within serve's memory bound: without a
// limit the collector lets the heap grow to twice what is live, and the
// bound holds only what is live. It sets the runtime's soft memory limit
// unless GOMEMLIMIT set one, follows the index's budget until ctx is done,
// and returns a function that puts the limit back as it was.
func holdMemory(ctx context.Context, db *engine.DB, inflight int64, stderr io.Writer) (restore func()) {
	b := db.MemoryBudget()
	bound := memoryBound(inflight, b)
	if os.Getenv("GOMEMLIMIT") != "" {
		fmt.Fprintf(stderr, "%s serve: memory: %s in flight, %s of cache, %s of memtables and %s besides; GOMEMLIMIT is set and kept\n",
			programName, sizeText(inflight), sizeText(b.Cache), sizeText(b.Memtables), sizeText(memoryOther))
		return func() {}
	}
	limit := goMemoryLimit(bound, b)
	old := debug.SetMemoryLimit(limit)
	fmt.Fprintf(stderr, "%s serve: memory bound %s: %s in flight, %s of cache, %s of memtables and %s besides (GOMEMLIMIT overrides)\n",
		programName, sizeText(bound), sizeText(inflight), sizeText(b.Cache), sizeText(b.Memtables), sizeText(memoryOther))
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		tick := time.NewTicker(memoryFollow)
		defer tick.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-done:
				return
			case <-tick.C:
				b := db.MemoryBudget()
				if l := goMemoryLimit(memoryBound(inflight, b), b); l != limit {
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
