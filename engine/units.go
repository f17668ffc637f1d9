package engine

import (
	"cmp"
	"math/bits"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2"
	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
)

// A query's matches are fingerprints; their documents are in the postings
// keyspace, and a Pebble seek there (file, filter, two index levels and a
// data block, each a cache look-up and a search) costs more than the probe
// of all the tables. So the postings are also cached, packed
// (cache.PackPairs), in the block cache, by unit: unit u holds the postings of
// the fingerprints whose top bits are u, about unitTarget of them. A warm
// look-up is then a slot load, the entry's header and a search in its
// packed pairs, each id beside its fingerprint.

// unitTarget is about how many postings a unit holds on average: a unit is
// read with one seek and a short scan, and costs the entry's overhead
// (cache.EntryOverhead) once.
const unitTarget = 64

// maxUnitBits bounds the unit directory (8 bytes a unit).
const maxUnitBits = 24

// defaultUnitMax is the most postings a cached unit holds. A unit with more (many
// documents share a fingerprint, or the fingerprints crowd in one part of
// the space) is cached as big, and its look-ups seek in Pebble as before.
const defaultUnitMax = 4096

// unitDir is a state's directory of units: the cache slot of each unit.
type unitDir struct {
	shift uint // a fingerprint's unit is fp >> shift
	max   int  // the most postings a cached unit holds (defaultUnitMax)
	// The slots: in slab, one array in unit order, for a directory made
	// new (a look-up finds slot u by address, one dependent load less), or
	// else in slots, which a flush's directory shares with the one before
	// while the unit's postings stay the same; a nil one there is made by
	// the first query that needs it.
	slab  []cache.Slot
	slots []atomic.Pointer[cache.Slot]
}

// newUnits returns an empty directory of units for docs documents.
func (db *DB) newUnits(docs int64) *unitDir {
	return newUnitDir(docs, cmp.Or(db.opts.knobs.unitMax, defaultUnitMax))
}

// unitBits is the number of unit bits for a state of docs documents.
func unitBits(docs int64) int {
	return min(bits.Len64(uint64(max(docs, 0))/unitTarget), maxUnitBits)
}

// newUnitDir returns an empty directory for docs documents, whose cached
// units hold at most max postings.
func newUnitDir(docs int64, max int) *unitDir {
	b := unitBits(docs)
	return &unitDir{shift: uint(64 - b), max: max, slab: make([]cache.Slot, 1<<b)}
}

// postingChange is a posting that a flush writes (add) or deletes.
type postingChange struct {
	fp, id uint64
	name   string
	add    bool
}

// carried is a unit that a flush brings up to date in the cache rather
// than dropping: it goes in its new slot once the flush is committed.
type carried struct {
	slot *cache.Slot
	b    *cache.Entry
}

// next returns the directory of the state after a flush that left docs
// documents and made the postings changes ch, the slots it no longer uses,
// and the changed units that were cached, with the changes applied: a
// flush touches most units, and a query should not pay for reading them
// again. A directory far from its size for docs (two bits or more) starts
// again empty. ch is left as it is: the flush writes it after.
func (d *unitDir) next(docs int64, ch []postingChange) (*unitDir, []*cache.Slot, []carried) {
	var dropped []*cache.Slot
	if b := unitBits(docs); b > 64-int(d.shift)+1 || b < 64-int(d.shift)-1 {
		for u := range d.len() {
			if s := d.peek(u); s != nil {
				dropped = append(dropped, s)
			}
		}
		return newUnitDir(docs, d.max), dropped, nil
	}
	n := &unitDir{shift: d.shift, max: d.max, slots: make([]atomic.Pointer[cache.Slot], d.len())}
	for u := range d.len() {
		n.slots[u].Store(d.peek(u))
	}
	// Only units that have a slot change (a directory made new has one for
	// every unit; after a resize, only those that queries needed).
	var cached []postingChange
	for _, c := range ch {
		if n.slots[n.unit(c.fp)].Load() != nil {
			cached = append(cached, c)
		}
	}
	ch = cached
	// Removals before additions of the same posting: a document written
	// again with the same fingerprint keeps its posting, with its new name.
	slices.SortFunc(ch, func(a, b postingChange) int {
		if c := cmp.Compare(a.fp, b.fp); c != 0 {
			return c
		}
		if c := cmp.Compare(a.id, b.id); c != 0 {
			return c
		}
		return cmpBool(a.add, b.add)
	})
	var carry []carried
	for len(ch) > 0 {
		u := n.unit(ch[0].fp)
		k := 1
		for k < len(ch) && n.unit(ch[k].fp) == u {
			k++
		}
		if s := n.slots[u].Load(); s != nil {
			n.slots[u].Store(nil)
			dropped = append(dropped, s)
			if b := s.Peek(); b != nil && !b.Big {
				if m := applyChanges(b, ch[:k], n.max); m != nil {
					ns := new(cache.Slot)
					n.slots[u].Store(ns)
					carry = append(carry, carried{ns, m})
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
func applyChanges(b *cache.Entry, ch []postingChange, max int) *cache.Entry {
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
		for k < len(ch) && ch[k].fp == ch[0].fp && ch[k].id == ch[0].id {
			k++
		}
		last := ch[k-1]
		for i < old.Len() && (old.At(i) < last.fp || old.At(i) == last.fp && old.ID(i) < last.id) {
			emit(old.At(i), old.ID(i), name(i))
			i++
		}
		if i < old.Len() && old.At(i) == last.fp && old.ID(i) == last.id {
			i++ // replaced or removed
		}
		if last.add {
			emit(last.fp, last.id, last.name)
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

// unitScratch holds the buffers unitOf gathers a unit in.
type unitScratch struct {
	fps, ids []uint64
	names    []string
}

var unitBufs = sync.Pool{New: func() any { return new(unitScratch) }}

// unit returns fp's unit (0 in a directory of one unit: shift 64).
func (d *unitDir) unit(fp uint64) uint64 { return fp >> d.shift }

// len is the number of units.
func (d *unitDir) len() uint64 { return uint64(max(len(d.slab), len(d.slots))) }

// peek returns unit u's slot, or nil if it has none yet.
func (d *unitDir) peek(u uint64) *cache.Slot {
	if d.slab != nil {
		return &d.slab[u]
	}
	return d.slots[u].Load()
}

// slot returns unit u's slot, making it if it has none.
func (d *unitDir) slot(u uint64) *cache.Slot {
	if s := d.peek(u); s != nil {
		return s
	}
	s := new(cache.Slot)
	if d.slots[u].CompareAndSwap(nil, s) {
		return s
	}
	return d.slots[u].Load()
}

// unitOf returns the cached postings of fp's unit in st, reading the unit
// from st's snapshot with it if it is not cached. ok is false for a big
// unit, whose postings the caller seeks in Pebble.
func (db *DB) unitOf(st *state, it *pebble.Iterator, fp uint64) (b *cache.Entry, ok bool, err error) {
	u := st.units.unit(fp)
	s := st.units.slot(u)
	if b = db.cache.Load(s); b != nil {
		return b, !b.Big, nil
	}
	lo := u << st.units.shift
	// Gathered in buffers kept for the next unit, and copied at their
	// length into the cache: what append leaves behind would be garbage
	// that lets the heap grow past the cache between collections.
	sc := unitBufs.Get().(*unitScratch)
	defer func() { clear(sc.names); unitBufs.Put(sc) }()
	fps, ids, names, named := sc.fps[:0], sc.ids[:0], sc.names[:0], false
	defer func() { sc.fps, sc.ids, sc.names = fps, ids, names }()
	for it.SeekGE(format.PostingPrefix(lo)); it.Valid(); it.Next() {
		f, id, err := format.ParsePostingKey(it.Key())
		if err != nil {
			return nil, false, err
		}
		if st.units.unit(f) != u {
			break
		}
		if len(fps) == st.units.max {
			db.cache.PutEntry(s, cache.BigUnit())
			return nil, false, nil
		}
		v, err := it.ValueAndErr()
		if err != nil {
			return nil, false, err
		}
		named = named || len(v) > 0
		names = append(names, string(v))
		fps = append(fps, f)
		ids = append(ids, id)
	}
	if err := it.Error(); err != nil {
		return nil, false, err
	}
	var nm []string
	if named {
		nm = slices.Clone(names)
	}
	b = cache.NewUnit(fps, ids, nm)
	db.cache.PutEntry(s, b)
	return b, true, nil
}
