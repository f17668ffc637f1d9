package units

import (
	"slices"
	"sync"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
)

// unitScratch holds the buffers Read gathers a unit in.
type unitScratch struct {
	fps, ids []uint64
	names    []string
}

var unitBufs = sync.Pool{New: func() any { return new(unitScratch) }}

// Read returns the cached postings of fp's unit, reading the unit with
// it (an iterator over the postings of the snapshot d describes) into c
// if it is not cached. ok is false for a big unit, whose postings the
// caller seeks in the store.
func (d *Dir) Read(c *cache.Cache, it *store.Iter, fp uint64) (b *cache.Entry, ok bool, err error) {
	u := d.Unit(fp)
	s := d.Slot(u)
	if b = c.Load(s); b != nil {
		return b, !b.Big, nil
	}
	lo := u << d.Shift()
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
		if d.Unit(f) != u {
			break
		}
		if len(fps) == d.Max() {
			c.PutEntry(s, cache.BigUnit())
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
	c.PutEntry(s, b)
	return b, true, nil
}
