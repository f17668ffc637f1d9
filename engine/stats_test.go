package engine

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/stretchr/testify/require"
)

// loadUniform loads n documents of uniform fingerprints into db.
func loadUniform(t testing.TB, db *DB, n int) {
	docs := make([]Doc, n)
	for i, fp := range fingerprints.Uniform(n, 4) {
		docs[i] = Doc{ID: uint64(i), Fingerprint: fp, Name: "x"}
	}
	require.NoError(t, db.Load(ctx, docs))
}

// TestStatsPebbleIndex: Stats counts the index and filter blocks of the
// Pebble files that hold the tables, more of them for a larger index, and
// Pebble's share of the cache they are read through.
func TestStatsPebbleIndex(t *testing.T) {
	var index []int64
	for _, n := range []int{1 << 12, 1 << 16} {
		db := openT(t, t.TempDir(), Options{SizeHint: int64(n), CacheSize: 256 << 20, Sync: SyncNone})
		loadUniform(t, db, n)
		st, err := db.Stats(ctx)
		require.NoError(t, err)
		require.NoError(t, db.Close())
		require.Positive(t, st.PebbleIndexBytes)
		require.Less(t, st.PebbleIndexBytes, st.PebbleBytes/10, "a small part of the files")
		require.Equal(t, int64(256<<20/pebbleCacheShare), st.PebbleCacheSize, "the base share holds them")
		require.Less(t, st.CacheForIndex, st.CacheSize)
		index = append(index, st.PebbleIndexBytes)
	}
	require.Greater(t, index[1], 4*index[0], "16 times the documents")
}

// TestCacheSplit: when Pebble's index blocks outgrow its base share of the
// cache, the share grows to hold them and the engine's cache gives up as
// much, after the load that made them and at the next open.
func TestCacheSplit(t *testing.T) {
	dir := t.TempDir()
	o := Options{SizeHint: 1 << 20, CacheSize: 1 << 20, Sync: SyncNone}
	o.knobs.minPebbleCache = 64 << 10
	db := openT(t, dir, o)
	base := int64(1 << 20 / pebbleCacheShare)
	require.Equal(t, base, db.store.CacheShare(), "an empty index")
	loadUniform(t, db, 1<<20)
	st, err := db.Stats(ctx)
	require.NoError(t, err)
	require.Greater(t, st.PebbleIndexBytes, base, "the test's premise")
	require.Equal(t, int64(float64(st.PebbleIndexBytes)*pebbleHeadroom), st.PebbleCacheSize, "grown to hold them")
	require.Equal(t, int64(1<<20), db.cache.Budget(), "the engine's cache keeps its floor")
	require.NoError(t, db.Close())

	o.ReadOnly = true
	db = openT(t, dir, o)
	defer db.Close()
	require.Equal(t, st.PebbleCacheSize, db.store.CacheShare(), "sized at open")
}

// TestPebbleShare: Pebble's share is an eighth of the budget (8 MiB at
// least) while its index blocks fit, grows with them, and stops at three
// quarters of the budget.
func TestPebbleShare(t *testing.T) {
	for _, tc := range []struct {
		cache, index, share, engine int64
	}{
		{256 << 20, 2 << 20, 32 << 20, 224 << 20},
		{256 << 20, 40 << 20, 80 << 20, 176 << 20},
		{256 << 20, 400 << 20, 192 << 20, 64 << 20},
		{32 << 20, 1 << 20, 8 << 20, 24 << 20},
		{32 << 20, 10 << 20, 20 << 20, 12 << 20},
		{32 << 20, 40 << 20, 24 << 20, 8 << 20},
	} {
		b := newCacheBudget(Options{CacheSize: tc.cache})
		share := b.pebbleFor(tc.index)
		require.Equal(t, tc.share, share, "%d MiB of index blocks in a cache of %d MiB", tc.index>>20, tc.cache>>20)
		require.Equal(t, tc.engine, b.engine(share))
		require.Equal(t, b.total, b.engine(share)+share, "the two caches take the budget")
	}
}

// TestStatsDamaged: where Pebble cannot read a table file's properties
// (its footer damaged), Stats returns every other figure and a
// *StatsError naming the ones it could not measure, matching ErrCorrupt.
func TestStatsDamaged(t *testing.T) {
	src := t.TempDir()
	db := openT(t, src, Options{SizeHint: 1 << 12, Sync: SyncNone})
	loadUniform(t, db, 1<<12)
	want, err := db.Stats(ctx)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	ssts, err := filepath.Glob(filepath.Join(src, store.Dir, "*.sst"))
	require.NoError(t, err)
	partial := 0
	for _, sst := range ssts {
		dir := t.TempDir()
		require.NoError(t, os.CopyFS(dir, os.DirFS(src)))
		path := filepath.Join(dir, store.Dir, filepath.Base(sst))
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		for i := len(b) - 40; i < len(b); i++ {
			b[i] ^= 0xff
		}
		require.NoError(t, os.WriteFile(path, b, 0o644))
		db, err := Open(dir, Options{ReadOnly: true})
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt, "%s", filepath.Base(sst))
			continue
		}
		st, err := db.Stats(ctx)
		require.NoError(t, db.Close())
		if err == nil {
			continue
		}
		var se *StatsError
		require.ErrorAs(t, err, &se)
		require.ErrorIs(t, err, ErrCorrupt)
		require.Equal(t, []string{"PebbleIndexBytes", "CacheForIndex"}, se.Fields)
		require.Zero(t, st.PebbleIndexBytes)
		require.Equal(t, want.Documents, st.Documents, "the other figures are filled")
		require.Equal(t, want.TableBytes, st.TableBytes)
		partial++
	}
	require.Positive(t, partial, "a damaged table file whose index opens (%d files)", len(ssts))
}
