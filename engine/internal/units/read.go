package units

import (
	"slices"
	"sync"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
)

// gathers holds the buffers Read gathers a unit in, kept for the next
// unit: the cache keeps a packed copy, and what append leaves behind would
// be garbage that lets the heap grow past the cache between collections.
var gathers = sync.Pool{New: func() any { return new(gather) }}

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
	g := gathers.Get().(*gather)
	defer func() { g.reset(); gathers.Put(g) }()
	for it.SeekGE(format.PostingPrefix(u << d.shift)); it.Valid(); it.Next() {
		f, id, err := format.ParsePostingKey(it.Key())
		if err != nil {
			return nil, false, err
		}
		if d.Unit(f) != u {
			break
		}
		v, err := it.Value()
		if err != nil {
			return nil, false, err
		}
		if g.add(f, id, v, d.Max()) {
			c.PutEntry(s, cache.BigUnit())
			return nil, false, nil
		}
	}
	if err := it.Error(); err != nil {
		return nil, false, err
	}
	b = g.entry(d.Max())
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
	spans := make([][2][]byte, len(us))
	for i, u := range us {
		spans[i] = d.span(u)
	}
	got := make([]gather, len(us))
	var bad error
	missed, err := s.ScanMany(spans, func(i int, k, v []byte) error {
		f, id, err := format.ParsePostingKey(k)
		if err != nil {
			bad = err
			return err
		}
		got[i].add(f, id, v, d.Max())
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
		c.PutEntry(d.Slot(u), got[i].entry(d.Max()))
	}
	return nil
}

// span is the keys of unit u's postings, [lo, hi).
func (d *Dir) span(u uint64) [2][]byte {
	_, upper := format.SpaceBounds(format.SpacePostings)
	sp := [2][]byte{format.PostingPrefix(u << d.shift), upper}
	if hi := (u + 1) << d.shift; hi != 0 { // else the last unit: to the space's end
		sp[1] = format.PostingPrefix(hi)
	}
	return sp
}

// gather collects a unit's postings as a scan of its span hands them over.
type gather struct {
	fps, ids []uint64
	names    []string
	named    bool
}

// add adds posting (f, id) with value v (its name), and reports whether
// the unit is now big: more than max postings, counted no further.
func (g *gather) add(f, id uint64, v []byte, max int) (big bool) {
	if len(g.fps) > max {
		return true
	}
	if g.fps == nil { // room for a unit as units are made to hold (packed, then dropped)
		g.fps, g.ids, g.names = make([]uint64, 0, unitTarget), make([]uint64, 0, unitTarget), make([]string, 0, unitTarget)
	}
	g.named = g.named || len(v) > 0
	g.fps, g.ids, g.names = append(g.fps, f), append(g.ids, id), append(g.names, string(v))
	return len(g.fps) > max
}

// entry is what the cache holds for the unit gathered: its postings
// packed, or a big unit's mark. The names are copied; g may be reused.
func (g *gather) entry(max int) *cache.Entry {
	if len(g.fps) > max {
		return cache.BigUnit()
	}
	var names []string
	if g.named {
		names = slices.Clone(g.names)
	}
	return cache.NewUnit(g.fps, g.ids, names)
}

// reset empties g for another unit, keeping its buffers.
func (g *gather) reset() {
	clear(g.names)
	g.fps, g.ids, g.names, g.named = g.fps[:0], g.ids[:0], g.names[:0], false
}
