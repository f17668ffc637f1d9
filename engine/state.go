package engine

import (
	"cmp"
	"sync"
	"sync/atomic"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/engine/internal/table"
	"github.com/simhashdb/simhashdb/engine/internal/units"
	"github.com/simhashdb/simhashdb/wal"
)

// state is what queries see of Pebble: a snapshot and the block directory
// and codes that describe it. A flush, a bulk load and Open make one, and
// install alone puts it in place (and does what follows).
type state struct {
	snap    *store.Snapshot
	tables  []table.Index
	blocks  table.Reader // the tables read from snap, through the cache
	docs    int64
	fps     int64
	walFrom wal.Position
	// applied is the position of the last commit the tables hold that had
	// one (Commit.Position), 0 if none did.
	applied uint64
	units   *units.Dir // the postings' units in the cache
	// iters keeps postings iterators on snap for reuse: opening one costs
	// about as much as the seek a match needs.
	iters chan *store.Iter
	// refs counts the DB's reference (while st is db.st) and those of
	// readers that use st without holding db.mu (acquire): the snapshot is
	// closed when the last goes.
	refs atomic.Int32
	// top is the highest id of a document snap holds, read once, when
	// first asked (lastDocID).
	top struct {
		once   sync.Once
		id     uint64
		stored bool
		err    error
	}
}

// topID returns the highest id of a document st holds, and whether it
// holds any: an id above it is new to st.
func (st *state) topID() (uint64, bool, error) {
	st.top.once.Do(func() { st.top.id, st.top.stored, st.top.err = lastDocID(st.snap) })
	return st.top.id, st.top.stored, st.top.err
}

// acquire returns the current state with a reference the caller gives back
// with unref: for readers that stream results without holding db.mu.
// db.mu is held.
func (db *DB) acquire() *state {
	st := db.st
	st.refs.Add(1)
	return st
}

// unref gives back a reference; the last one closes st.
func (st *state) unref() error {
	if st.refs.Add(-1) == 0 {
		return st.close()
	}
	return nil
}

// newState returns the state of tables (those not yet indexed are indexed
// here), with the counters and the WAL position that go with them, and
// the directory of units. Its snapshot is taken by open, once Pebble holds
// what it describes.
func newState(tables []table.Index, docs, fps int64, walFrom wal.Position, units *units.Dir) *state {
	for t := range tables {
		if !tables[t].Built() {
			tables[t].Build()
		}
	}
	st := &state{tables: tables, docs: docs, fps: fps, walFrom: walFrom, units: units}
	st.refs.Store(1)
	return st
}

// open takes st's snapshot of db's store: queries see it as it is now.
func (st *state) open(db *DB) *state {
	st.snap, st.iters = db.store.NewSnapshot(), make(chan *store.Iter, 8)
	st.blocks = table.Reader{Design: db.design.Tables, Tables: st.tables, Snap: st.snap, Cache: db.cache, Reads: &db.missReads, Workers: db.readWorkers}
	return st
}

// postingsIter returns an iterator over st's postings, reused if one is
// free.
func (st *state) postingsIter() (*store.Iter, error) {
	select {
	case it := <-st.iters:
		return it, nil
	default:
		lo, hi := format.SpaceBounds(format.SpacePostings)
		return st.snap.NewIter(store.IterOptions{Lower: lo, Upper: hi})
	}
}

// release gives an iterator from postingsIter back.
func (st *state) release(it *store.Iter) {
	if it == nil {
		return
	}
	select {
	case st.iters <- it:
	default:
		it.Close()
	}
}

// close closes the state's free iterators and its snapshot; no query may
// use it any more.
func (st *state) close() error {
	for {
		select {
		case it := <-st.iters:
			it.Close()
		default:
			return st.snap.Close()
		}
	}
}

// newUnits returns an empty directory of units for docs documents.
func (db *DB) newUnits(docs int64) *units.Dir {
	return units.New(docs, cmp.Or(db.opts.knobs.unitMax, units.DefaultMax))
}

// successor is what follows the installation of a new state, as its
// maker (a flush, a bulk load, Open) knows it.
type successor struct {
	// dropped are the cache slots of blocks and units the new state no
	// longer has.
	dropped []*cache.Slot
	// fills are blocks the maker decoded already, and carry the postings
	// units it carried over: the cache takes them, so that neither
	// queries nor the next flush decode them again.
	fills []table.Filled
	carry []units.Carried
	// merged says the new state holds the oldest frozen memtable, which
	// leaves the list.
	merged bool
	// split says Pebble's files changed: its share of the cache is sized
	// again (splitCache).
	split bool
}

// install makes st the state readers see, and does what follows: under
// db.mu it takes st's snapshot's place, drops the cache's stale slots,
// takes a merged memtable off the frozen list and wakes those waiting on
// db.cond; outside it, it fills the cache (a query may have cached a new
// block first, and put then keeps its copy), sizes the cache's split and
// gives back the old state's reference. st's snapshot is taken here, once
// Pebble holds what st describes. The caller holds flushMu (at Open,
// nothing else runs yet).
func (db *DB) install(st *state, s successor) error {
	st.open(db)
	db.mu.Lock()
	old := db.st
	db.st = st
	for _, sl := range s.dropped {
		db.cache.Drop(sl)
	}
	if s.merged {
		// Reads freeze newer memtables meanwhile, never older ones.
		db.frozen = db.frozen[:len(db.frozen)-1]
	}
	db.cond.Broadcast()
	db.mu.Unlock()
	for _, fl := range s.fills {
		db.cache.PutEntry(fl.Slot, cache.NewEntry(fl.Packed, fl.Pend))
	}
	for _, c := range s.carry {
		db.cache.PutEntry(c.Slot, c.Entry)
	}
	if fit := db.fitCache(); s.split || fit {
		db.splitCache(fit)
	}
	if old == nil {
		return nil
	}
	return old.unref()
}

// tableIndexBytes is the size of the blocks a cold query reads besides
// its data blocks: the index and filter blocks of the Pebble files that
// hold table blocks and pending lists, and the index blocks of those that
// hold postings (a query's look-up of its matches' postings seeks without
// the filters). Without the postings' index blocks, a query with a match
// waits for two reads in a row after its table blocks.
func (db *DB) tableIndexBytes() (int64, error) {
	tables, err := db.store.IndexBytes(spanOf(format.SpaceTables), spanOf(format.SpacePending))
	if err != nil {
		return 0, err
	}
	postings, err := db.store.IndexOnlyBytes(spanOf(format.SpacePostings))
	return tables + postings, err
}

// spanOf is the key span of a keyspace.
func spanOf(space byte) [2][]byte {
	lo, hi := format.SpaceBounds(space)
	return [2][]byte{lo, hi}
}

// fitCache sizes a default cache for the index as it is now
// (fitCacheSize): its directories grow with it, and its memtables' budget
// too unless the caller set it. It never goes above the budget Open made
// Pebble's cache for. A CacheSize the caller gave stays as it is. It
// reports whether the budget changed. The caller holds flushMu: with db.mu
// it guards db.budget.
func (db *DB) fitCache() bool {
	if !db.opts.autoCache {
		return false
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	total := min(fitCacheSize(db.opts.memLimit, db.memtablesMax()+db.directoryBytes()), db.opts.CacheSize)
	if total == db.budget.Total {
		return false
	}
	db.log.Debug("simhashdb: cache fitted", "cache", total, "was", db.budget.Total, "memory limit", db.opts.memLimit)
	db.budget.Total = total
	return true
}

// splitCache sizes Pebble's share of the cache for the index as it is now
// (at open, after a flush or a load changed its files, and when the cache's
// budget changed: resized). Where Pebble cannot read its files'
// properties the split stays as it is: a damaged file is for Check to
// name, not for Open or a flush to fail on.
func (db *DB) splitCache(resized bool) {
	share := min(db.store.CacheShare(), db.budget.Most())
	idx, err := db.tableIndexBytes()
	if err == nil {
		share = db.budget.PebbleFor(idx)
	} else {
		db.log.Warn("simhashdb: sizing Pebble's share of the cache", "error", err)
	}
	if share == db.store.CacheShare() && !resized {
		return
	}
	// The cache that grows grows after the other shrank.
	if share > db.store.CacheShare() {
		db.cache.SetBudget(db.budget.Engine(share))
		db.store.SetCacheShare(share)
	} else {
		db.store.SetCacheShare(share)
		db.cache.SetBudget(db.budget.Engine(share))
	}
	db.log.Debug("simhashdb: cache split", "pebble_index_bytes", idx, "pebble_share", share, "engine_cache", db.budget.Engine(share))
}
