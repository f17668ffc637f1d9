package engine

import (
	"cmp"

	"github.com/simhashdb/simhashdb/engine/internal/format"
)

// Options.CacheSize is shared by the engine's cache of table blocks and
// Pebble's block cache. Pebble's holds, besides the data blocks it reads,
// the index and filter blocks of its files, which every read of a block
// not cached goes through: while they fit, a cold probe costs one disk
// read a table; when they do not, it costs more. In an index much larger
// than the cache the engine's cache holds a sliver of the tables, and
// Pebble's index blocks, one for hundreds of table blocks, are what pays:
// so Pebble's share grows to hold them with room to spare, up to
// maxPebbleShare of the budget, and the engine's shrinks by as much. An
// index whose index blocks take less than half of the base share (an
// eighth of the budget, 8 MiB at least) keeps the base split.

// pebbleCacheShare is the part of Options.CacheSize that goes to Pebble's
// block cache while the index and filter blocks of its files fit: one in
// pebbleCacheShare bytes.
const pebbleCacheShare = 8

// maxPebbleShare bounds Pebble's share of CacheSize: at most three
// quarters of it.
const maxPebbleShare = 0.75

// minPebbleCache is the least Pebble's block cache gets.
const minPebbleCache = 8 << 20

// pebbleHeadroom is Pebble's share over its index and filter blocks:
// every data block a cold read brings in passes through its cache too,
// and with little room over them they push index blocks out
// (BenchmarkColdQuerySplit; bench/results/journal.md).
const pebbleHeadroom = 2.0

// cacheBudget divides Options.CacheSize between Pebble's block cache and
// the engine's (table blocks and postings units, which share it as their
// entries come): the one reader of CacheSize. Stats reports the division
// (CacheSize, PebbleCacheSize, CacheForIndex).
type cacheBudget struct {
	total     int64   // Options.CacheSize
	minPebble int64   // the least Pebble's share gets
	maxShare  float64 // the part of total Pebble's share grows to at most
}

// newCacheBudget is the budget of o.
func newCacheBudget(o Options) cacheBudget {
	return cacheBudget{total: o.CacheSize, minPebble: cmp.Or(o.knobs.minPebbleCache, minPebbleCache), maxShare: cmp.Or(o.knobs.maxPebbleShare, maxPebbleShare)}
}

// base is Pebble's share while its index blocks fit.
func (b cacheBudget) base() int64 { return max(b.total/pebbleCacheShare, b.minPebble) }

// most is the most Pebble's share grows to.
func (b cacheBudget) most() int64 { return max(int64(float64(b.total)*b.maxShare), b.base()) }

// engine is what the engine's cache holds when Pebble's has share.
func (b cacheBudget) engine(share int64) int64 { return max(b.total-share, 1<<20) }

// pebbleFor is Pebble's share for index and filter blocks of idx bytes.
func (b cacheBudget) pebbleFor(idx int64) int64 {
	return min(max(int64(float64(idx)*pebbleHeadroom), b.base()), b.most())
}

// totalFor is the CacheSize whose Pebble share would hold index and filter
// blocks of idx bytes with their headroom.
func (b cacheBudget) totalFor(idx int64) int64 {
	return int64(float64(idx) * pebbleHeadroom / b.maxShare)
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

// splitCache sizes Pebble's share of the cache for the index as it is now
// (at open, and after a flush or a load changed its files). Where Pebble
// cannot read its files' properties the split stays as it is: a damaged
// file is for Check to name, not for Open or a flush to fail on.
func (db *DB) splitCache() {
	idx, err := db.tableIndexBytes()
	if err != nil {
		db.log.Warn("simhashdb: sizing Pebble's share of the cache", "error", err)
		return
	}
	share := db.budget.pebbleFor(idx)
	if share == db.store.CacheShare() {
		return
	}
	// The cache that grows grows after the other shrank.
	if share > db.store.CacheShare() {
		db.cache.SetBudget(db.budget.engine(share))
		db.store.SetCacheShare(share)
	} else {
		db.store.SetCacheShare(share)
		db.cache.SetBudget(db.budget.engine(share))
	}
	db.log.Debug("simhashdb: cache split", "pebble_index_bytes", idx, "pebble_share", share, "engine_cache", db.budget.engine(share))
}
