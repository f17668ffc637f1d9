package main

import (
	"fmt"
	"io"
	"math"
	"os"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/memhold"
)

// inflightDecoded is what the batch bodies in flight take decoded, over
// their bytes: each line's document, its name a string of its own, held
// until the batch's commit (1.7 times with names of 430 bytes).
const inflightDecoded = 2

// memoryBound is the memory serve keeps within: the batch bodies in flight,
// decoded, the index's cache, memtables and directories, and memhold.Other.
// The sum stops at math.MaxInt64: flags of exabytes must not wrap it into
// a small limit.
func memoryBound(inflight int64, b engine.MemoryBudget) int64 {
	sum := int64(0)
	if inflight > math.MaxInt64/inflightDecoded {
		return math.MaxInt64
	}
	for _, n := range []int64{inflightDecoded * inflight, b.Cache, b.Memtables, b.Directories, memhold.Other} {
		if n > math.MaxInt64-sum {
			return math.MaxInt64
		}
		sum += n
	}
	return sum
}

// indexMemory is what serve leaves its index of limit, the memory the
// process may use (0: unknown, and the index sizes itself by it): its
// hold's share of it less the batch bodies in flight, decoded, and
// memhold.Other; a quarter of limit at least. The index's default cache,
// memtables and reads are sized for it (engine.Options.MemoryLimit).
func indexMemory(limit, inflight int64) int64 {
	if limit <= 0 {
		return 0
	}
	rest := memhold.HeldBound(limit) - min(inflight, limit)*inflightDecoded - memhold.Other
	return max(rest, limit/4)
}

// goMemoryLimit is the Go runtime's soft limit for a bound, before the
// memory outside the Go heap is measured: less Pebble's block cache (kept
// outside the heap where cgo is enabled; where it is not, the heap holds
// it and collects a little sooner) and memhold.Outside.
func goMemoryLimit(bound int64, b engine.MemoryBudget) int64 {
	return max(bound-b.PebbleCache-memhold.Outside, memhold.Other)
}

// holdMemory keeps the process within serve's memory bound: without a
// limit the collector lets the heap grow to twice what is live, and the
// bound holds only what is live. Unless GOMEMLIMIT is set it narrows the
// process's hold (memhold.HoldProcess) to the bound, or to the memory the
// process may use where that is less, and follows the index's budget as
// it changes; it returns a function that puts the hold
// back as it was.
func holdMemory(db *engine.DB, inflight int64, stderr io.Writer) (restore func()) {
	b := db.MemoryBudget()
	bound := memoryBound(inflight, b)
	parts := fmt.Sprintf("%s in flight (twice that decoded), %s of cache, %s of memtables, %s of directories and %s besides",
		sizeText(inflight), sizeText(b.Cache), sizeText(b.Memtables), sizeText(b.Directories), sizeText(memhold.Other))
	if os.Getenv("GOMEMLIMIT") != "" {
		fmt.Fprintf(stderr, "%s serve: memory: %s; GOMEMLIMIT is set and kept\n", programName, parts)
		return func() {}
	}
	hold, limit := memhold.Process()
	if limit > 0 {
		limit = memhold.HeldBound(limit) // as the process's own hold
	}
	if limit > 0 && bound > limit {
		fmt.Fprintf(stderr, "%s serve: memory bound %s, 15/16 of the memory the process may use, under a budget of %s: %s (GOMEMLIMIT overrides)\n",
			programName, sizeText(limit), sizeText(bound), parts)
	} else {
		fmt.Fprintf(stderr, "%s serve: memory bound %s: %s (GOMEMLIMIT overrides)\n", programName, sizeText(bound), parts)
	}
	t := memhold.Target{
		Bound: func() int64 {
			n := memoryBound(inflight, db.MemoryBudget())
			if limit > 0 {
				n = min(n, limit)
			}
			return n
		},
		Blind: func(bound int64) int64 { return goMemoryLimit(bound, db.MemoryBudget()) },
	}
	if hold != nil {
		return hold.Narrow(t)
	}
	return memhold.Start(t).Stop
}
