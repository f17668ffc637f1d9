package cache

import (
	"math/bits"
	"sync"
	"sync/atomic"
)

// Slot holds the packed form of one table block while it is cached. The
// block directory keeps a Slot per block, so a warm probe finds its block
// with an index and an atomic load: no map, no lock.
type Slot struct{ p atomic.Pointer[Entry] }

// Peek returns what s caches, or nil, neither marked as used nor counted:
// a caller that looks up many slots at once (a probe of every table) loads
// them all first, then marks (Mark) and counts (Hit) them.
func (s *Slot) Peek() *Entry { return s.p.Load() }

// Store puts b in s outside any Cache's budget: for tests that lay out
// slots by hand.
func (s *Slot) Store(b *Entry) { s.p.Store(b) }

// Entry is a table block, packed (packed.go), and its pending list,
// apart: a flush that adds to the list caches the new list beside the same
// block. Or it is a unit of postings (the engine's units.go): its fingerprints, each
// paired with a document id, in Packed.
//
// A probe reads a block's header and then its data: the whole struct takes
// 64 bytes, one cache line (TestEntrySize).
type Entry struct {
	Packed Packed // a table block's permuted fingerprints, or a unit's postings (PackPairs)
	ref    atomic.Bool
	Big    bool      // a unit too big to cache, whose look-ups seek in Pebble
	pend   *[]uint64 // a table block's pending list, ascending, if any; none of it is in pk
	// names are a unit's document names, beside pk's postings; nil if all
	// are empty.
	names *[]string
}

func NewEntry(pk Packed, pend []uint64) *Entry {
	b := &Entry{Packed: pk}
	if len(pend) > 0 {
		p := pend // a copy: pend's address taken would move it to the heap at every call
		b.pend = &p
	}
	return b
}

// SetView makes b table block fps (ascending) and its pending list, for
// one probe: fps is rewritten and must outlive b (View).
func (b *Entry) SetView(fps, pend []uint64) {
	b.Packed, b.pend = View(fps), nil
	if len(pend) > 0 {
		p := pend // as in NewEntry
		b.pend = &p
	}
}

// NewUnit returns the cached unit of the postings fps (ascending), ids
// and names (nil if all are empty).
func NewUnit(fps, ids []uint64, names []string) *Entry {
	b := &Entry{Packed: PackPairs(fps, ids)}
	if names != nil {
		n := names // as in NewEntry
		b.names = &n
	}
	return b
}

// BigUnit is what the cache holds for a unit too big to cache.
func BigUnit() *Entry { return &Entry{Big: true} }

// Pending returns the block's pending list.
func (b *Entry) Pending() []uint64 {
	if b.pend == nil {
		return nil
	}
	return *b.pend
}

// Scan calls fn(v, d) for each fingerprint v of a table block and of its
// pending list in [lo, hi] within distance k of pq, d the distance: the
// block's from i (its Packed.LowerBound(lo), or a walk's answer) on, then
// the pending list's.
func (b *Entry) Scan(i int, lo, hi, pq uint64, k int, fn func(v uint64, d int)) {
	b.Packed.Scan(i, hi, pq, k, fn)
	for _, v := range b.pendingIn(lo, hi) {
		if d := bits.OnesCount64(v ^ pq); d <= k {
			fn(v, d)
		}
	}
}

// Each calls fn for each fingerprint of a table block and of its pending
// list in [lo, hi]: the block's in order, then the pending list's.
func (b *Entry) Each(lo, hi uint64, fn func(v uint64)) {
	for x := b.Packed.LowerBound(lo); x < b.Packed.Len(); x++ {
		v := b.Packed.At(x)
		if v > hi {
			break
		}
		fn(v)
	}
	for _, v := range b.pendingIn(lo, hi) {
		fn(v)
	}
}

// pendingIn returns the block's pending fingerprints in [lo, hi].
func (b *Entry) pendingIn(lo, hi uint64) []uint64 {
	pend := b.Pending()
	x := LowerBound(pend, lo)
	y := x
	for y < len(pend) && pend[y] <= hi {
		y++
	}
	return pend[x:y]
}

// Name returns the name of a unit's posting i.
func (b *Entry) Name(i int) string {
	if b.names == nil {
		return ""
	}
	return (*b.names)[i]
}

func (b *Entry) Cost() int64 {
	c := int64(len(b.Pending()))*8 + EntryOverhead + b.Packed.Bytes()
	if b.names != nil {
		for _, n := range *b.names {
			c += int64(len(n)) + 16
		}
	}
	return c
}

// EntryOverhead is an entry's cost besides its slices: the
// Entry, its slot and its place in the ring.
const EntryOverhead = 96

// Cache bounds the memory of cached blocks (packed: a little larger
// than the codec's form; decoding is what a warm probe saves) and of units
// of postings, and evicts
// with the CLOCK algorithm, so a hit costs one atomic load and no write
// unless the block's reference bit is clear.
type Cache struct {
	budget atomic.Int64
	used   atomic.Int64
	hits   atomic.Uint64
	misses atomic.Uint64
	mu     sync.Mutex // ring and hand
	ring   []*Slot
	hand   int
	door   doorkeeper // Admit's
}

func New(budget int64) *Cache {
	c := &Cache{}
	c.budget.Store(budget)
	return c
}

// Get returns the table block s caches, or nil, and counts the hit or
// miss.
func (c *Cache) Get(s *Slot) *Entry {
	if b := c.Load(s); b != nil {
		c.hits.Add(1)
		return b
	}
	c.misses.Add(1)
	return nil
}

// Hit counts n hits found with Slot.Peek: a caller that looks up many
// blocks at once counts its hits with one atomic add for all. An atomic
// add is a full fence on x86: one per block would keep the core from
// overlapping the blocks' cache misses, which is what a probe of every table is for. A
// miss is read through get, which counts it.
func (c *Cache) Hit(n int) {
	if n > 0 {
		c.hits.Add(uint64(n))
	}
}

// Put caches table block fps, packed, and its pending list in s.
func (c *Cache) Put(s *Slot, fps, pend []uint64) {
	c.PutEntry(s, NewEntry(Pack(fps), pend))
}

// Load returns what s caches, or nil, uncounted: the hits and misses
// count table blocks.
func (c *Cache) Load(s *Slot) *Entry { return c.Mark(s.p.Load()) }

// Mark marks b, read from a slot, as used since the clock hand last
// passed, and returns it.
func (c *Cache) Mark(b *Entry) *Entry {
	if b != nil && !b.ref.Load() {
		b.ref.Store(true)
	}
	return b
}

// PutEntry caches b in s unless s holds something already.
func (c *Cache) PutEntry(s *Slot, b *Entry) {
	if b.Cost() > c.budget.Load() || !s.p.CompareAndSwap(nil, b) {
		return
	}
	c.used.Add(b.Cost())
	// Marked as used, by the probe that read it: evict moves the newest
	// slot to the hand when it takes one, and unmarked it would go next.
	b.ref.Store(true)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ring = append(c.ring, s)
	c.evict()
}

// evict runs the clock hand until the cache is within its budget; c.mu is
// held.
func (c *Cache) evict() {
	for c.used.Load() > c.budget.Load() && len(c.ring) > 0 {
		c.hand %= len(c.ring)
		s := c.ring[c.hand]
		b := s.p.Load()
		if b != nil && b.ref.Load() {
			b.ref.Store(false)
			c.hand++
			continue
		}
		if b != nil && s.p.CompareAndSwap(b, nil) {
			c.used.Add(-b.Cost())
		}
		c.ring[c.hand] = c.ring[len(c.ring)-1]
		c.ring = c.ring[:len(c.ring)-1]
	}
}

// Drop forgets a block that a flush replaced.
func (c *Cache) Drop(s *Slot) {
	if b := s.p.Swap(nil); b != nil {
		c.used.Add(-b.Cost())
	}
}

// Budget is the most bytes the cache holds.
func (c *Cache) Budget() int64 { return c.budget.Load() }

// SetBudget changes the most bytes the cache holds, evicting down to it.
func (c *Cache) SetBudget(n int64) {
	c.budget.Store(n)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.evict()
}

// Room is the bytes the cache can take before it evicts.
func (c *Cache) Room() int64 { return c.budget.Load() - c.used.Load() }

// Stats returns the bytes cached, and the table blocks' hits and misses.
func (c *Cache) Stats() (used int64, hits, misses uint64) {
	return c.used.Load(), c.hits.Load(), c.misses.Load()
}

// Clear empties the cache (benchmarks measure cold reads with it).
func (c *Cache) Clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, s := range c.ring {
		c.Drop(s)
	}
	c.ring, c.hand = nil, 0
}
