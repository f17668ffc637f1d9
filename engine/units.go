package engine

import (
	"cmp"
	"slices"
	"sync"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/engine/internal/units"
)

// The postings of a query's matches are cached by unit (package units):
// unitOf reads a unit that is not.

// newUnits returns an empty directory of units for docs documents.
func (db *DB) newUnits(docs int64) *units.Dir {
	return units.New(docs, cmp.Or(db.opts.knobs.unitMax, units.DefaultMax))
}

// unitScratch holds the buffers unitOf gathers a unit in.
type unitScratch struct {
	fps, ids []uint64
	names    []string
}

var unitBufs = sync.Pool{New: func() any { return new(unitScratch) }}

// unitOf returns the cached postings of fp's unit in st, reading the unit
// from st's snapshot with it if it is not cached. ok is false for a big
// unit, whose postings the caller seeks in Pebble.
func (db *DB) unitOf(st *state, it *store.Iter, fp uint64) (b *cache.Entry, ok bool, err error) {
	u := st.units.Unit(fp)
	s := st.units.Slot(u)
	if b = db.cache.Load(s); b != nil {
		return b, !b.Big, nil
	}
	lo := u << st.units.Shift()
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
		if st.units.Unit(f) != u {
			break
		}
		if len(fps) == st.units.Max() {
			db.cache.PutEntry(s, cache.BigUnit())
			return nil, false, nil
		}
		v, err := it.Value()
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
