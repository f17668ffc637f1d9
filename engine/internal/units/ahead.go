package units

import (
	"sync"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
)

// Ahead is a query's own unit, read before the query knows whether it
// needs it: in the same submission as the table blocks its probes miss
// (store.Snapshot.ReadMany), so that a match in it waits for no second
// round of the disk. A query's own unit holds its duplicates and every
// match that differs from it only below the unit's bits; for a query
// without one, the read costs a block in a round it waits for anyway. Its blocks are scanned, and the unit cached, only if a match
// falls in it (Holds, Keep).
type Ahead struct {
	d    *Dir
	u    uint64
	span [2][]byte
	g    gather
}

var aheads = sync.Pool{New: func() any { return new(Ahead) }}

// Ahead returns the read ahead of fp's unit, or nil if the cache holds
// it. Give it back with Release.
func (d *Dir) Ahead(fp uint64) *Ahead {
	u := d.Unit(fp)
	if d.Slot(u).Peek() != nil {
		return nil
	}
	a := aheads.Get().(*Ahead)
	a.d, a.u, a.span = d, u, d.span(u)
	return a
}

// Span is the keys to read: the unit's postings, [lo, hi).
func (a *Ahead) Span() [2][]byte { return a.span }

// Holds reports whether fp's postings would be in the unit.
func (a *Ahead) Holds(fp uint64) bool { return a.d.Unit(fp) == a.u }

// Keep caches the unit in c from sp, the blocks of Span read: a match
// falls in it, whose postings the query then finds cached. A span sp
// leaves, or a posting key not of the format, caches nothing: the query
// reads the unit as it would have without a.
func (a *Ahead) Keep(c *cache.Cache, sp Spans) {
	missed, err := sp.Scan(func(_ int, k, v []byte) error {
		f, id, err := format.ParsePostingKey(k)
		if err != nil {
			return err
		}
		a.g.add(f, id, v, a.d.Max())
		return nil
	})
	if err == nil && len(missed) == 0 {
		c.PutEntry(a.d.Slot(a.u), a.g.entry(a.d.Max()))
	}
}

// Spans is the span read ahead, to scan (store.Spans).
type Spans interface {
	Scan(fn func(i int, k, v []byte) error) (missed []int, err error)
}

// Release gives a back for another query's read.
func (a *Ahead) Release() {
	a.g.reset()
	a.d, a.span = nil, [2][]byte{}
	aheads.Put(a)
}
