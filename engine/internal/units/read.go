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

// Scanner reads the keys of many spans at once where Mapped says it can
// (store.Snapshot.ScanMany).
type Scanner interface {
	Mapped() bool
	ScanMany(spans [][2][]byte, fn func(i int, k, v []byte) error) (missed []int, err error)
}

// ReadMany caches the units of fps that are not cached, all read at once
// where s can (a read-only store's files): a query's matches then wait for
// one round of the disk, not a seek each. The units it leaves, Read reads
// one at a time. An error is a posting key not of the format; a read that
// failed, or a block found damaged, leaves every unit to Read, whose
// iterator reports it where it meets it.
func (d *Dir) ReadMany(c *cache.Cache, s Scanner, fps []uint64) error {
	if !s.Mapped() {
		return nil
	}
	var us []uint64
	for _, fp := range fps {
		if u := d.Unit(fp); c.Load(d.Slot(u)) == nil && !slices.Contains(us, u) {
			us = append(us, u)
		}
	}
	if len(us) == 0 {
		return nil
	}
	_, upper := format.SpaceBounds(format.SpacePostings)
	spans := make([][2][]byte, len(us))
	for i, u := range us {
		spans[i][0], spans[i][1] = format.PostingPrefix(u<<d.shift), upper
		if hi := (u + 1) << d.shift; hi != 0 { // else the last unit: to the space's end
			spans[i][1] = format.PostingPrefix(hi)
		}
	}
	type unit struct {
		fps, ids []uint64
		names    []string
		named    bool
	}
	got := make([]unit, len(us))
	var bad error
	missed, err := s.ScanMany(spans, func(i int, k, v []byte) error {
		f, id, err := format.ParsePostingKey(k)
		if err != nil {
			bad = err
			return err
		}
		g := &got[i]
		if len(g.fps) > d.Max() {
			return nil // big: counted no further
		}
		if g.fps == nil { // room for a unit as units are made to hold (packed, then dropped)
			g.fps, g.ids = make([]uint64, 0, unitTarget), make([]uint64, 0, unitTarget)
		}
		g.named = g.named || len(v) > 0
		g.fps, g.ids, g.names = append(g.fps, f), append(g.ids, id), append(g.names, string(v))
		return nil
	})
	if bad != nil {
		return bad
	}
	if err != nil {
		return nil
	}
	for i, u := range us {
		if len(missed) > 0 && missed[0] == i {
			missed = missed[1:]
			continue
		}
		g := got[i]
		if len(g.fps) > d.Max() {
			c.PutEntry(d.Slot(u), cache.BigUnit())
			continue
		}
		if g.names = slices.Clip(g.names); !g.named {
			g.names = nil
		}
		c.PutEntry(d.Slot(u), cache.NewUnit(g.fps, g.ids, g.names))
	}
	return nil
}
