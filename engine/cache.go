package engine

import (
	"sync"
	"sync/atomic"
)

// slot holds the packed form of one table block while it is cached. The
// block directory keeps a slot per block, so a warm probe finds its block
// with an index and an atomic load: no map, no lock.
type slot struct{ p atomic.Pointer[cacheEntry] }

// cacheEntry is a table block, packed (packed.go), and its pending list,
// apart: a flush that adds to the list caches the new list beside the same
// block. Or it is a unit of postings (units.go): its fingerprints, each
// paired with a document id, in pk.
//
// A probe reads a block's header and then its data: the whole struct takes
// 64 bytes, one cache line (TestCacheEntrySize).
type cacheEntry struct {
	pk   packed // a table block's permuted fingerprints, or a unit's postings (packPairs)
	ref  atomic.Bool
	big  bool      // a unit too big to cache, whose look-ups seek in Pebble
	pend *[]uint64 // a table block's pending list, ascending, if any; none of it is in pk
	// names are a unit's document names, beside pk's postings; nil if all
	// are empty.
	names *[]string
}

func newCacheEntry(pk packed, pend []uint64) *cacheEntry {
	b := &cacheEntry{pk: pk}
	if len(pend) > 0 {
		b.pend = &pend
	}
	return b
}

// newUnit returns the cached unit of the postings fps (ascending), ids
// and names (nil if all are empty).
func newUnit(fps, ids []uint64, names []string) *cacheEntry {
	b := &cacheEntry{pk: packPairs(fps, ids)}
	if names != nil {
		b.names = &names
	}
	return b
}

// bigUnit is what the cache holds for a unit too big to cache.
func bigUnit() *cacheEntry { return &cacheEntry{big: true} }

// pending returns the block's pending list.
func (b *cacheEntry) pending() []uint64 {
	if b.pend == nil {
		return nil
	}
	return *b.pend
}

// name returns the name of a unit's posting i.
func (b *cacheEntry) name(i int) string {
	if b.names == nil {
		return ""
	}
	return (*b.names)[i]
}

func (b *cacheEntry) cost() int64 {
	c := int64(len(b.pending()))*8 + cacheEntryOverhead + b.pk.bytes()
	if b.names != nil {
		for _, n := range *b.names {
			c += int64(len(n)) + 16
		}
	}
	return c
}

// cacheEntryOverhead is an entry's cost besides its slices: the
// cacheEntry, its slot and its place in the ring.
const cacheEntryOverhead = 96

// blockCache bounds the memory of cached blocks (packed: a little larger
// than the codec's form; decoding is what a warm probe saves) and of units
// of postings, and evicts
// with the CLOCK algorithm, so a hit costs one atomic load and no write
// unless the block's reference bit is clear.
type blockCache struct {
	budget int64
	used   atomic.Int64
	hits   atomic.Uint64
	misses atomic.Uint64
	mu     sync.Mutex // ring and hand
	ring   []*slot
	hand   int
}

func newBlockCache(budget int64) *blockCache { return &blockCache{budget: budget} }

// get returns the table block s caches, or nil, and counts the hit or
// miss.
func (c *blockCache) get(s *slot) *cacheEntry {
	if b := c.getBlock(s); b != nil {
		c.hits.Add(1)
		return b
	}
	c.misses.Add(1)
	return nil
}

// hit counts n hits found with getBlock: a caller that looks up many
// blocks at once counts its hits with one atomic add for all. An atomic
// add is a full fence on x86: one per block would keep the core from
// overlapping the blocks' cache misses, which is what probeAll is for. A
// miss is read through get, which counts it.
func (c *blockCache) hit(n int) {
	if n > 0 {
		c.hits.Add(uint64(n))
	}
}

// put caches table block fps, packed, and its pending list in s.
func (c *blockCache) put(s *slot, fps, pend []uint64) {
	c.putBlock(s, newCacheEntry(pack(fps), pend))
}

// getBlock returns what s caches, or nil, uncounted: the hits and misses
// count table blocks.
func (c *blockCache) getBlock(s *slot) *cacheEntry { return c.mark(s.p.Load()) }

// mark marks b, read from a slot, as used since the clock hand last
// passed, and returns it.
func (c *blockCache) mark(b *cacheEntry) *cacheEntry {
	if b != nil && !b.ref.Load() {
		b.ref.Store(true)
	}
	return b
}

// putBlock caches b in s unless s holds something already.
func (c *blockCache) putBlock(s *slot, b *cacheEntry) {
	if b.cost() > c.budget || !s.p.CompareAndSwap(nil, b) {
		return
	}
	c.used.Add(b.cost())
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ring = append(c.ring, s)
	for c.used.Load() > c.budget && len(c.ring) > 0 {
		c.hand %= len(c.ring)
		s := c.ring[c.hand]
		b := s.p.Load()
		if b != nil && b.ref.Load() {
			b.ref.Store(false)
			c.hand++
			continue
		}
		if b != nil && s.p.CompareAndSwap(b, nil) {
			c.used.Add(-b.cost())
		}
		c.ring[c.hand] = c.ring[len(c.ring)-1]
		c.ring = c.ring[:len(c.ring)-1]
	}
}

// drop forgets a block that a flush replaced.
func (c *blockCache) drop(s *slot) {
	if b := s.p.Swap(nil); b != nil {
		c.used.Add(-b.cost())
	}
}

func (c *blockCache) stats() (used int64, hits, misses uint64) {
	return c.used.Load(), c.hits.Load(), c.misses.Load()
}

// clear empties the cache (benchmarks measure cold reads with it).
func (c *blockCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.ring {
		c.drop(s)
	}
	c.ring, c.hand = nil, 0
}
