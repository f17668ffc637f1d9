// Package units is the directory of the postings' units in the cache: a
// query's matches are fingerprints, whose documents are in the postings
// keyspace, and a Pebble seek there (file, filter, two index levels and a
// data block, each a cache look-up and a search) costs more than the probe
// of all the tables. So the postings are also cached, packed
// (cache.PackPairs), in the block cache, by unit: unit u holds the postings
// of the fingerprints whose top bits are u, about unitTarget of them. A warm
// look-up is then a slot load, the entry's header and a search in its
// packed pairs, each id beside its fingerprint. A flush carries the units
// it changes into the next directory (Next).
package units

import (
	"cmp"
	"math/bits"
	"slices"
	"sync/atomic"
	"unsafe"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
)

// unitTarget is about how many postings a unit holds on average: a unit is
// read with one seek and a short scan, and costs the entry's overhead
// (cache.EntryOverhead) once.
const unitTarget = 64

// maxUnitBits bounds the unit directory (8 bytes a unit).
const maxUnitBits = 24

// DefaultMax is the most postings a cached unit holds. A unit with more (many
// documents share a fingerprint, or the fingerprints crowd in one part of
// the space) is cached as big, and its look-ups seek in Pebble as before.
const DefaultMax = 4096

// Dir is a state's directory of units: the cache slot of each unit.
type Dir struct {
	shift uint // a fingerprint's unit is fp >> shift
	max   int  // the most postings a cached unit holds (DefaultMax)
	// The slots: in slab, one array in unit order, for a directory made
	// new (a look-up finds slot u by address, one dependent load less), or
	// else in slots, which a flush's directory shares with the one before
	// while the unit's postings stay the same; a nil one there is made by
	// the first query that needs it.
	slab  []cache.Slot
	slots []atomic.Pointer[cache.Slot]
}

// MemoryBytes is the memory the directory holds: a slot a unit, and its
// pointer where the directory shares slots with the one before.
func (d *Dir) MemoryBytes() int64 {
	slot := int64(unsafe.Sizeof(cache.Slot{}))
	return int64(len(d.slab))*slot + int64(len(d.slots))*(slot+int64(unsafe.Sizeof(atomic.Pointer[cache.Slot]{})))
}

// Bits is the number of unit bits for a state of docs documents.
func Bits(docs int64) int {
	return min(bits.Len64(uint64(max(docs, 0))/unitTarget), maxUnitBits)
}

// New returns an empty directory for docs documents, whose cached
// units hold at most max postings.
func New(docs int64, max int) *Dir {
	b := Bits(docs)
	return &Dir{shift: uint(64 - b), max: max, slab: make([]cache.Slot, 1<<b)}
}

// Change is a posting that a flush writes (Add) or deletes.
type Change struct {
	FP, ID uint64
	Name   string
	Add    bool
}

// Carried is a unit that a flush brings up to date in the cache rather
// than dropping: it goes in its new slot once the flush is committed.
type Carried struct {
	Slot  *cache.Slot
	Entry *cache.Entry
}

// Next returns the directory of the state after a flush that left docs
// documents and made the postings changes ch, the slots it no longer uses,
// and the changed units that were cached, with the changes applied: a
// flush touches most units, and a query should not pay for reading them
// again. A directory far from its size for docs (two bits or more) starts
// again empty. ch is left as it is: the flush writes it after.
func (d *Dir) Next(docs int64, ch []Change) (*Dir, []*cache.Slot, []Carried) {
	var dropped []*cache.Slot
	if b := Bits(docs); b > 64-int(d.shift)+1 || b < 64-int(d.shift)-1 {
		for u := range d.Len() {
			if s := d.Peek(u); s != nil {
				dropped = append(dropped, s)
			}
		}
		return New(docs, d.max), dropped, nil
	}
	n := &Dir{shift: d.shift, max: d.max, slots: make([]atomic.Pointer[cache.Slot], d.Len())}
	for u := range d.Len() {
		n.slots[u].Store(d.Peek(u))
	}
	// Only units that have a slot change (a directory made new has one for
	// every unit; after a resize, only those that queries needed).
	var cached []Change
	for _, c := range ch {
		if n.slots[n.Unit(c.FP)].Load() != nil {
			cached = append(cached, c)
		}
	}
	ch = cached
	// Removals before additions of the same posting: a document written
	// again with the same fingerprint keeps its posting, with its new name.
	slices.SortFunc(ch, func(a, b Change) int {
		if c := cmp.Compare(a.FP, b.FP); c != 0 {
			return c
		}
		if c := cmp.Compare(a.ID, b.ID); c != 0 {
			return c
		}
		return cmpBool(a.Add, b.Add)
	})
	var carry []Carried
	for len(ch) > 0 {
		u := n.Unit(ch[0].FP)
		k := 1
		for k < len(ch) && n.Unit(ch[k].FP) == u {
			k++
		}
		if s := n.slots[u].Load(); s != nil {
			n.slots[u].Store(nil)
			dropped = append(dropped, s)
			if b := s.Peek(); b != nil && !b.Big {
				if m := applyChanges(b, ch[:k], n.max); m != nil {
					ns := new(cache.Slot)
					n.slots[u].Store(ns)
					carry = append(carry, Carried{ns, m})
				}
			}
		}
		ch = ch[k:]
	}
	return n, dropped, carry
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return 1
	}
	return -1
}

// applyChanges returns cached unit b with the changes ch (sorted, all in
// b's unit) applied, or nil if that makes it bigger than max.
func applyChanges(b *cache.Entry, ch []Change, max int) *cache.Entry {
	old := &b.Packed
	size := old.Len() + len(ch)
	fps, ids, names := make([]uint64, 0, size), make([]uint64, 0, size), make([]string, 0, size)
	named := false
	emit := func(fp, id uint64, name string) {
		fps, ids, names = append(fps, fp), append(ids, id), append(names, name)
		named = named || name != ""
	}
	name := b.Name
	i := 0
	for len(ch) > 0 {
		// The changes of one posting: the last one stands.
		k := 1
		for k < len(ch) && ch[k].FP == ch[0].FP && ch[k].ID == ch[0].ID {
			k++
		}
		last := ch[k-1]
		for i < old.Len() && (old.At(i) < last.FP || old.At(i) == last.FP && old.ID(i) < last.ID) {
			emit(old.At(i), old.ID(i), name(i))
			i++
		}
		if i < old.Len() && old.At(i) == last.FP && old.ID(i) == last.ID {
			i++ // replaced or removed
		}
		if last.Add {
			emit(last.FP, last.ID, last.Name)
		}
		ch = ch[k:]
	}
	for ; i < old.Len(); i++ {
		emit(old.At(i), old.ID(i), name(i))
	}
	if len(fps) > max {
		return nil
	}
	if !named {
		names = nil
	}
	return cache.NewUnit(fps, ids, names)
}

// Unit returns fp's unit (0 in a directory of one unit: shift 64).
func (d *Dir) Unit(fp uint64) uint64 { return fp >> d.shift }

// Len is the number of units.
func (d *Dir) Len() uint64 { return uint64(max(len(d.slab), len(d.slots))) }

// Peek returns unit u's slot, or nil if it has none yet.
func (d *Dir) Peek(u uint64) *cache.Slot {
	if d.slab != nil {
		return &d.slab[u]
	}
	return d.slots[u].Load()
}

// Slot returns unit u's slot, making it if it has none.
func (d *Dir) Slot(u uint64) *cache.Slot {
	if s := d.Peek(u); s != nil {
		return s
	}
	s := new(cache.Slot)
	if d.slots[u].CompareAndSwap(nil, s) {
		return s
	}
	return d.slots[u].Load()
}

// Shift is how far a fingerprint is shifted for its unit (Unit).
func (d *Dir) Shift() uint { return d.shift }

// Max is the most postings a cached unit holds.
func (d *Dir) Max() int { return d.max }
