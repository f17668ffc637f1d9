package engine

import (
	"errors"
	"sync"

	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/memtable"
	"github.com/simhashdb/simhashdb/engine/internal/store"
)

// docCount counts the documents a reader finds: the flushed ones, and what
// the memtables add and remove. A memtable's writes are counted against
// the layers below it, one look-up each, so the count is kept for as long
// as neither the memtables nor what is below them change: frozen
// memtables are never written, and a freeze or a flush changes the newest
// frozen one or the state.
type docCount struct {
	mu     sync.Mutex
	st     *state
	mem    *memtable.Memtable
	writes uint64 // mem's at the count
	frozen int
	newest *memtable.Memtable // the newest frozen memtable at the count
	n      int64
}

// documents returns the number of documents a Get finds; db.mu is held
// (read).
func (db *DB) documents() (int64, error) {
	c := &db.docCount
	c.mu.Lock()
	defer c.mu.Unlock()
	v := db.lockedView()
	var newest *memtable.Memtable
	if len(v.frozen) > 0 {
		newest = v.frozen[0]
	}
	if c.st == v.st && c.mem == v.live && c.writes == v.live.Writes() && c.frozen == len(v.frozen) && c.newest == newest {
		return c.n, nil
	}
	n := v.st.docs
	for i := range v.layers() {
		for id, d := range v.layer(i).Docs() {
			was, err := v.storedBelow(id, i)
			if err != nil {
				return 0, err
			}
			switch {
			case d.Live && !was:
				n++
			case !d.Live && was:
				n--
			}
		}
	}
	c.st, c.mem, c.writes, c.frozen, c.newest, c.n = v.st, v.live, v.live.Writes(), len(v.frozen), newest, n
	return n, nil
}

// storedBelow reports whether id is stored in the layers of v under
// memtable i: the older memtables, then the flushed state.
func (v *view) storedBelow(id uint64, i int) (bool, error) {
	for j := i + 1; j < v.layers(); j++ {
		if d, ok := v.layer(j).Get(id); ok {
			return d.Live, nil
		}
	}
	_, c, err := v.st.snap.Get(format.DocKey(id))
	if errors.Is(err, store.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, c.Close()
}
