package engine

import (
	"context"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestWarm(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := corpus(60000, 21)
	db := openT(t, dir, testOptions())
	require.NoError(t, db.Load(ctx, DocsOf(docs[:50000])))
	for _, d := range docs[50000:] { // pending lists and a memtable beside the blocks
		require.NoError(t, db.Insert(ctx, d))
	}
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Close())
	o := oracleOf(docs)
	qs := queries(o, 3, 100, rand.New(rand.NewPCG(21, 22)))

	t.Run("room for everything", func(t *testing.T) {
		opts := testOptions()
		opts.CacheSize = 256 << 20
		db := openT(t, dir, opts)
		defer db.Close()
		require.NoError(t, db.Warm(ctx))
		before, err := db.Stats(ctx)
		require.NoError(t, err)
		require.Positive(t, before.CacheBytes)
		checkNear(t, db, o, qs, "warmed")
		after, err := db.Stats(ctx)
		require.NoError(t, err)
		require.Equal(t, before.CacheMisses, after.CacheMisses, "a warmed index reads no block")
		require.Greater(t, after.CacheHits, before.CacheHits)
		require.Equal(t, before.CacheBytes, after.CacheBytes, "nor any unit of postings")
	})

	t.Run("no second copy in Pebble's cache", func(t *testing.T) {
		// Room for all (as without the reservation), then for none.
		for _, room := range []int64{1 << 40, 0} {
			opts := testOptions()
			opts.knobs.warmPebbleRoom = &room
			opts.CacheSize = 256 << 20
			db := openT(t, dir, opts)
			require.NoError(t, db.Warm(ctx))
			st, err := db.Stats(ctx)
			require.NoError(t, err)
			require.Greater(t, st.CacheBytes, int64(2<<20), "the index is megabytes, all read through Pebble")
			if room > 0 {
				require.Greater(t, st.PebbleCacheBytes, int64(1<<20), "Pebble's cache after Warm, with room")
			} else {
				require.Less(t, st.PebbleCacheBytes, int64(256<<10), "Pebble's cache after Warm")
			}
			checkNear(t, db, o, qs, "warmed")
			require.NoError(t, db.Close())
		}
	})

	t.Run("a cache smaller than the index", func(t *testing.T) {
		opts := testOptions()
		opts.CacheSize = 1 << 20 // 1 MiB of blocks; the index takes several
		db := openT(t, dir, opts)
		defer db.Close()
		require.NoError(t, db.Warm(ctx))
		st, err := db.Stats(ctx)
		require.NoError(t, err)
		budget := db.cache.Budget()
		require.Greater(t, st.CacheBytes, budget/2, "warming fills the cache")
		require.LessOrEqual(t, st.CacheBytes, budget+int64(db.block)*4, "and stops when it is full")
		checkNear(t, db, o, qs, "part warmed")
	})

	t.Run("while writes flush", func(t *testing.T) {
		wdir := t.TempDir()
		db := openT(t, wdir, testOptions())
		defer db.Close()
		require.NoError(t, db.Load(ctx, DocsOf(docs[:50000])))
		done := make(chan error, 1)
		go func() {
			for _, d := range docs[50000:] { // a 64 KiB memtable: many flushes
				if err := db.Insert(ctx, d); err != nil {
					done <- err
					return
				}
			}
			done <- db.Flush(ctx)
		}()
		for range 3 {
			require.NoError(t, db.Warm(ctx))
		}
		require.NoError(t, <-done)
		require.NoError(t, db.Warm(ctx))
		checkNear(t, db, o, qs, "warmed while writing")
	})

	t.Run("cancelled and closed", func(t *testing.T) {
		db := openT(t, dir, testOptions())
		c, cancel := context.WithCancel(ctx)
		cancel()
		require.ErrorIs(t, db.Warm(c), context.Canceled)
		require.NoError(t, db.Close())
		require.ErrorIs(t, db.Warm(ctx), ErrClosed)
	})
}

// checkNear compares queries at the index's k with the oracle.
func checkNear(t *testing.T, db *DB, o oracle, qs []uint64, stage string) {
	t.Helper()
	for _, q := range qs {
		got, err := db.Query(ctx, q, db.K())
		require.NoError(t, err)
		want := o.query(q, db.K())
		require.Equal(t, len(want), len(got), "%s: query %016x", stage, q)
		if len(want) > 0 {
			require.Equal(t, want, got, "%s: query %016x", stage, q)
		}
	}
}
