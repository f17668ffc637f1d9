package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestWriteRoom: Pebble reserves its memtables and a flush's batch from its
// block cache until it has written them; the engine sizes Pebble's cache so
// that the blocks keep their share while the writes of the memtable budget
// in force are reserved. A scan of more than that share then leaves it
// full.
func TestWriteRoom(t *testing.T) {
	for _, tc := range []struct {
		name   string
		opts   Options
		budget int64 // 0: the one in force after the load
	}{
		{"memtable set", Options{MemtableSize: 4 << 20}, 0},
		{"default memtable, grown budget", Options{}, 200 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.opts.CacheSize, tc.opts.Sync = 64<<20, SyncNone
			db := openT(t, t.TempDir(), tc.opts)
			defer db.Close()
			require.NoError(t, db.Load(ctx, corpus(400_000, 1)))
			budget := db.memtableBudget()
			if tc.budget > 0 {
				budget = tc.budget
				db.fitWriteRoom(budget)
			}
			// As Pebble does for a batch of twice the budget.
			release := db.pcache.Reserve(int(2 * budget))
			defer release()
			it, err := db.pdb.NewIter(nil)
			require.NoError(t, err)
			n := 0
			for it.First(); it.Valid(); it.Next() {
				n += len(it.Key()) + len(it.Value())
			}
			require.NoError(t, it.Close())
			require.Greater(t, int64(n), 2*db.pebbleCache, "the scan reads more than the cache holds")
			assert.GreaterOrEqual(t, db.pdb.Metrics().BlockCache.Size, db.pebbleCache/2, "blocks held")
		})
	}
}
