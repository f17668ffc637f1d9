package engine

import (
	"github.com/simhashdb/simhashdb/engine/internal/store"
)

// testingKnobs are what only tests set, in the Options of the index they
// open: no test changes a package variable, so tests may run in parallel.
// The zero value is the engine's behaviour.
type testingKnobs struct {
	// flushWrites sees each flush's runs of writes before they are
	// committed, and the batches among them.
	flushWrites func([]store.Writes, []*store.Batch)
	// replayStep runs after each flush of a replay; an error stops Open
	// there, as a crash would.
	replayStep func() error
	// postingsPerSST and docsPerSST, when positive, are how many postings
	// and documents a bulk load writes to one sstable.
	postingsPerSST, docsPerSST int
	// warmPebbleRoom, when set, is the room Warm leaves in Pebble's cache.
	warmPebbleRoom *int64
	// unitMax, when positive, is the most postings a cached unit holds.
	unitMax int
	// newStoreOrder, when set, orders the keys of a new store (tests make
	// the stores of earlier builds with Pebble's default).
	newStoreOrder *store.Order
	// afterPin runs when a read has pinned its view, before it computes.
	afterPin func()
	// stalled runs, with db.mu held, when a writer of a commit of cost
	// waits for room in the memtables or for its turn.
	stalled func(cost int64)
	// minPebbleCache, if not 0, replaces minPebbleCache: tests make an
	// index whose Pebble index blocks outgrow a small share.
	minPebbleCache int64
	// maxPebbleShare, if not 0, replaces maxPebbleShare: the baseline of
	// BenchmarkColdQuerySplit keeps Pebble's share at its base.
	maxPebbleShare float64
}
