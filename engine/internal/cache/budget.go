package cache

// The engine's cache budget (Options.CacheSize) is shared by its cache
// of table blocks and postings and Pebble's block cache. Pebble's holds, besides the data blocks it reads,
// the index and filter blocks of its files, which every read of a block
// not cached goes through: while they fit, a cold probe costs one disk
// read a table; when they do not, it costs more. In an index much larger
// than the cache the engine's cache holds a sliver of the tables, and
// Pebble's index blocks, one for hundreds of table blocks, are what pays:
// so Pebble's share grows to hold them with room to spare, up to
// MaxPebbleShare of the budget, and the engine's shrinks by as much. An
// index whose index blocks take less than half of the base share (an
// eighth of the budget, 8 MiB at least) keeps the base split.

// PebbleCacheShare is the part of Options.CacheSize that goes to Pebble's
// block cache while the index and filter blocks of its files fit: one in
// PebbleCacheShare bytes.
const PebbleCacheShare = 8

// MaxPebbleShare bounds Pebble's share of CacheSize: at most three
// quarters of it.
const MaxPebbleShare = 0.75

// MinPebbleCache is the least Pebble's block cache gets.
const MinPebbleCache = 8 << 20

// PebbleHeadroom is Pebble's share over its index and filter blocks:
// every data block a cold read brings in passes through its cache too,
// and with little room over them they push index blocks out
// (BenchmarkColdQuerySplit; bench/results/journal.md).
const PebbleHeadroom = 2.0

// Budget divides Options.CacheSize between Pebble's block cache and
// the engine's (table blocks and postings units, which share it as their
// entries come). Open makes the one Budget of an index from
// CacheSize; Stats reports the division
// (CacheSize, PebbleCacheSize, CacheForIndex).
type Budget struct {
	Total     int64   // Options.CacheSize
	MinPebble int64   // the least Pebble's share gets (MinPebbleCache)
	MaxShare  float64 // the part of Total Pebble's share grows to at most (MaxPebbleShare)
}

// Base is Pebble's share while its index blocks fit.
func (b Budget) Base() int64 { return max(b.Total/PebbleCacheShare, b.MinPebble) }

// Most is the most Pebble's share grows to.
func (b Budget) Most() int64 { return max(int64(float64(b.Total)*b.MaxShare), b.Base()) }

// Engine is what the engine's cache holds when Pebble's has share.
func (b Budget) Engine(share int64) int64 { return max(b.Total-share, 1<<20) }

// PebbleFor is Pebble's share for index and filter blocks of idx bytes.
func (b Budget) PebbleFor(idx int64) int64 {
	return min(max(int64(float64(idx)*PebbleHeadroom), b.Base()), b.Most())
}

// TotalFor is the CacheSize whose Pebble share would hold index and filter
// blocks of idx bytes with their headroom.
func (b Budget) TotalFor(idx int64) int64 {
	return int64(float64(idx) * PebbleHeadroom / b.MaxShare)
}
