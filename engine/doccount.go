package engine

import (
	"errors"
	"sync"

	"github.com/cockroachdb/pebble/v2"
)

// docCount counts the documents a reader finds: the flushed ones, and what
// the memtables add and remove. A memtable's writes are counted against
// the layers below it, one look-up each, so the count is kept for as long
// as neither the memtable nor what is below it changes.
type docCount struct {
	mu     sync.Mutex
	st     *state
	imm    *memtable
	mem    *memtable
	writes [2]uint64 // imm's and mem's at the count
	n      int64
}

// documents returns the number of documents a Get finds; e.mu is held
// (read).
func (e *DB) documents() (int64, error) {
	c := &e.docCount
	c.mu.Lock()
	defer c.mu.Unlock()
	st, imm, mem := e.st, e.imm, e.mem
	w := [2]uint64{0, mem.writes}
	if imm != nil {
		w[0] = imm.writes
	}
	if c.st == st && c.imm == imm && c.mem == mem && c.writes == w {
		return c.n, nil
	}
	n := st.docs
	for _, m := range []*memtable{imm, mem} {
		if m == nil {
			continue
		}
		for id, d := range m.docs {
			was, err := e.storedBelow(id, m, st)
			if err != nil {
				return 0, err
			}
			switch {
			case d.live && !was:
				n++
			case !d.live && was:
				n--
			}
		}
	}
	c.st, c.imm, c.mem, c.writes, c.n = st, imm, mem, w, n
	return n, nil
}

// storedBelow reports whether id is stored in the layers under memtable m:
// imm (when m is mem), then the flushed state st.
func (e *DB) storedBelow(id uint64, m *memtable, st *state) (bool, error) {
	if m == e.mem && e.imm != nil {
		if d, ok := e.imm.docs[id]; ok {
			return d.live, nil
		}
	}
	_, c, err := st.snap.Get(docKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, c.Close()
}
