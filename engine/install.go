package engine

import (
	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/table"
)

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
	carry []carried
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
	st.open(db.store.DB)
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
		if fl.FPs == nil {
			db.cache.PutEntry(fl.Slot, cache.NewEntry(fl.Packed, fl.Pend))
		} else {
			db.cache.Put(fl.Slot, fl.FPs, fl.Pend)
		}
	}
	for _, c := range s.carry {
		db.cache.PutEntry(c.slot, c.b)
	}
	if s.split {
		db.splitCache()
	}
	if old == nil {
		return nil
	}
	return old.unref()
}
