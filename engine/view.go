package engine

import (
	"iter"

	"github.com/simhashdb/simhashdb/engine/internal/memtable"
)

// view is what one read sees: a flushed state and the memtables whose
// writes it does not hold yet, newest first. A view taken with db.mu held
// (lockedView) includes the live memtable, which writers change: it is
// read only while db.mu stays held, by reads too short to matter to
// writers. A long read (QueryBatch of many queries, FindAll, Clusters,
// Stars, Docs) takes a pinned view instead (pinView): the live memtable
// is frozen first, so every memtable of the view is immutable, and the
// state is referenced, so the read computes without db.mu while writers
// go on, as Pebble's readState lets them.
type view struct {
	st     *state
	live   *memtable.Memtable   // nil in a pinned view
	frozen []*memtable.Memtable // newest first; never written again, nor is the slice
	pinned bool
}

// rlockOpen takes db.mu for reading, unless the index is closed.
func (db *DB) rlockOpen() error {
	db.mu.RLock()
	if db.closed {
		db.mu.RUnlock()
		return ErrClosed
	}
	return nil
}

// lockedView is the view of the index now; db.mu is held (read) for as long
// as it is used.
func (db *DB) lockedView() view { return view{st: db.st, live: db.mem, frozen: db.frozen} }

// pinView returns a view that the caller reads without db.mu and gives back
// with unpin. Close waits for pinned views to be given back.
func (db *DB) pinView() (*view, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.closed {
		return nil, ErrClosed
	}
	db.freeze()
	db.readers.Add(1)
	v := &view{st: db.acquire(), frozen: db.frozen, pinned: true}
	if hook := db.opts.knobs.afterPin; hook != nil {
		db.mu.Unlock()
		hook()
		db.mu.Lock()
	}
	return v, nil
}

// unpin gives back a view from pinView.
func (v *view) unpin(db *DB) {
	v.st.unref()
	db.readers.Done()
}

// maxFrozen is how many frozen memtables wait for a flush before one
// starts: every query searches each of them.
const maxFrozen = 4

// freeze makes the live memtable, unless it is empty, the newest frozen
// one, and starts a new one; db.mu is held (write). A freeze by a read
// starts no log segment: the flush that takes the frozen memtables starts
// one after them.
func (db *DB) freeze() {
	if db.mem.Empty() {
		return
	}
	frozen := make([]*memtable.Memtable, 0, len(db.frozen)+1)
	db.frozen = append(append(frozen, db.mem), db.frozen...)
	db.mem = memtable.New(db.design)
	db.sealed = false
	if len(db.frozen) >= maxFrozen {
		db.signalFlush()
	}
}

// unflushed is the estimated memory of the writes not flushed yet; db.mu is
// held.
func (db *DB) unflushed() int64 {
	n := db.mem.Size()
	for _, m := range db.frozen {
		n += m.Size()
	}
	return n
}

// layers is the number of memtables in v.
func (v *view) layers() int {
	if v.live != nil {
		return len(v.frozen) + 1
	}
	return len(v.frozen)
}

// layer returns v's memtable i, 0 the newest.
func (v *view) layer(i int) *memtable.Memtable {
	if v.live != nil {
		if i == 0 {
			return v.live
		}
		i--
	}
	return v.frozen[i]
}

// memEmpty reports whether v's memtables hold no write.
func (v *view) memEmpty() bool {
	for i := range v.layers() {
		if !v.layer(i).Empty() {
			return false
		}
	}
	return true
}

// search calls fn for every memtable fingerprint within k of q (see
// memtable.search).
func (v *view) search(q uint64, k int, fn func(fp uint64, d int)) {
	for i := range v.layers() {
		v.layer(i).Search(q, k, fn)
	}
}

// flushedShown reports whether every document of v's flushed state is
// as it stands there: no memtable of v writes an id the state holds, as
// when the memtables hold only documents numbered above every stored one
// (NextID), or nothing.
func (v *view) flushedShown() (bool, error) {
	for i := range v.layers() {
		m := v.layer(i)
		if m.Len() == 0 {
			continue
		}
		// Read once a state, and only with writes in memory: a read-only
		// open's first queries wait for no read of the documents.
		top, stored, err := v.st.topID()
		if err != nil {
			return false, err
		}
		if stored && m.MinTouched() <= top {
			return false, nil
		}
	}
	return true, nil
}

// memHolds reports whether a document's newest write in v's memtables
// gives it fingerprint fp.
func (v *view) memHolds(fp uint64) bool {
	for range v.memWriters(fp) {
		return true
	}
	return false
}

// memWriters yields the ids whose newest write in v's memtables gives
// them fingerprint fp, each with the memtable that holds it.
func (v *view) memWriters(fp uint64) iter.Seq2[uint64, *memtable.Memtable] {
	return func(yield func(uint64, *memtable.Memtable) bool) {
		for i := range v.layers() {
			m := v.layer(i)
			for _, id := range m.IDs(fp) {
				if !v.hiddenAbove(id, i) && !yield(id, m) {
					return
				}
			}
		}
	}
}

// hidden reports whether a memtable holds a newer write of id than the
// flushed state.
func (v *view) hidden(id uint64) bool { return v.hiddenAbove(id, v.layers()) }

// hiddenAbove reports whether one of the memtables newer than layer i
// holds a write of id.
func (v *view) hiddenAbove(id uint64, i int) bool {
	for j := range i {
		if v.layer(j).Touched(id) {
			return true
		}
	}
	return false
}

// memDoc returns the newest write of id in v's memtables, if any.
func (v *view) memDoc(id uint64) (memtable.Doc, bool) {
	for i := range v.layers() {
		if d, ok := v.layer(i).Get(id); ok {
			return d, true
		}
	}
	return memtable.Doc{}, false
}

// appendMemMatches appends the documents whose newest write in v's
// memtables gives them fingerprint c.fp.
func (v *view) appendMemMatches(out []Match, c candidate) []Match {
	for id, m := range v.memWriters(c.fp) {
		d, _ := m.Get(id)
		out = append(out, Match{Doc{ID: id, Fingerprint: c.fp, Name: d.Name}, c.d})
	}
	return out
}

// memDocs returns the live documents of v's memtables, the newest write of
// each id.
func (v *view) memDocs() []Doc {
	var out []Doc
	for i := range v.layers() {
		for id, d := range v.layer(i).Docs() {
			if d.Live && !v.hiddenAbove(id, i) {
				out = append(out, Doc{ID: id, Fingerprint: d.FP, Name: d.Name})
			}
		}
	}
	return out
}
