package engine

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
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
	require.NoError(t, db.Load(ctx, DocsOf(docs)))
}

// TestStatsPebbleIndex: Stats counts the index and filter blocks of the
// Pebble files that hold the tables, more of them for a larger index, and
// Pebble's share of the cache they are read through.
func TestStatsPebbleIndex(t *testing.T) {
	t.Parallel()
	var index []int64
	for _, n := range []int{1 << 12, 1 << 16} {
		db := openT(t, t.TempDir(), Options{SizeHint: int64(n), CacheSize: 256 << 20, Sync: SyncNone})
		loadUniform(t, db, n)
		st, err := db.Stats(ctx)
		require.NoError(t, err)
		require.NoError(t, db.Close())
		require.Positive(t, st.PebbleIndexBytes)
		require.Less(t, st.PebbleIndexBytes, st.PebbleBytes/10, "a small part of the files")
		require.Equal(t, int64(256<<20/cache.PebbleCacheShare), st.PebbleCacheSize, "the base share holds them")
		require.Less(t, st.CacheForIndex, st.CacheSize)
		index = append(index, st.PebbleIndexBytes)
	}
	require.Greater(t, index[1], 4*index[0], "16 times the documents")
}

// TestCacheSplit: when Pebble's index blocks outgrow its base share of the
// cache, the share grows to hold them and the engine's cache gives up as
// much, after the load that made them and at the next open.
func TestCacheSplit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := Options{SizeHint: 1 << 20, CacheSize: 1 << 20, Sync: SyncNone}
	o.knobs.minPebbleCache = 64 << 10
	db := openT(t, dir, o)
	base := int64(1 << 20 / cache.PebbleCacheShare)
	require.Equal(t, base, db.store.CacheShare(), "an empty index")
	loadUniform(t, db, 1<<20)
	st, err := db.Stats(ctx)
	require.NoError(t, err)
	require.Greater(t, st.PebbleIndexBytes, base, "the test's premise")
	require.Equal(t, int64(float64(st.PebbleIndexBytes)*cache.PebbleHeadroom), st.PebbleCacheSize, "grown to hold them")
	require.Equal(t, int64(1<<20), db.cache.Budget(), "the engine's cache keeps its floor")
	require.NoError(t, db.Close())

	o.ReadOnly = true
	db = openT(t, dir, o)
	defer db.Close()
	require.Equal(t, st.PebbleCacheSize, db.store.CacheShare(), "sized at open")
}

// TestStatsDamaged: where Pebble cannot read a table file's properties
// (its footer damaged), Stats returns every other figure and a
// *StatsError naming the ones it could not measure, matching ErrCorrupt.
func TestStatsDamaged(t *testing.T) {
	t.Parallel()
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

// TestStatsCountsWhatReadersFind: Stats' Documents is the number of
// documents Get finds, through inserts, replacements and deletes in the
// memtable, a flush, and more writes on top of flushed ones.
func TestStatsCountsWhatReadersFind(t *testing.T) {
	t.Parallel()
	db := openT(t, t.TempDir(), Options{SizeHint: 1 << 12, MemtableSize: 1 << 30, Sync: SyncNone})
	defer db.Close()
	r := rand.New(rand.NewPCG(9, 9))
	model := map[uint64]bool{}
	check := func(when string) {
		st, err := db.Stats(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(len(model)), st.Documents, when)
	}
	write := func(n int) {
		for range n {
			id := uint64(r.IntN(5000))
			if r.IntN(4) == 0 {
				require.NoError(t, db.Delete(ctx, id))
				delete(model, id)
			} else {
				require.NoError(t, db.Insert(ctx, Doc{ID: id, Fingerprint: r.Uint64()}))
				model[id] = true
			}
		}
	}
	check("empty")
	write(3224)
	check("all in the memtable")
	check("again, from the kept count")
	require.NoError(t, db.Flush(ctx))
	check("flushed")
	write(2000)
	check("writes over flushed documents")
	require.NoError(t, db.Flush(ctx))
	check("flushed again")
}

// TestMemoryBudgetDirectories: the budget counts what the index keeps of
// every block, which grows with it: at least a block's key, size and cache
// slot for each table, twice for a writable index, whose flushes build new
// directories beside the old.
func TestMemoryBudgetDirectories(t *testing.T) {
	dir := t.TempDir()
	o := testOptions()
	o.MemtableSize = 16 << 20 // no flush but the test's
	db := openT(t, dir, o)
	require.NoError(t, db.Load(ctx, DocsOf(corpus(60000, 31))))
	blocks := func(db *DB) int64 {
		st, err := db.Stats(ctx)
		require.NoError(t, err)
		n := 0
		for _, ts := range st.Tables {
			n += ts.Blocks
		}
		return int64(n)
	}
	const least = 8 + 4 + 8 // key, size, slot
	b := blocks(db)
	w := db.MemoryBudget().Directories
	require.GreaterOrEqual(t, w, 2*least*b, "%d blocks", b)
	require.Less(t, w, 2*100*b, "%d blocks", b)

	docs := corpus(20000, 32)
	for i := range docs {
		docs[i].ID += 1 << 40
	}
	require.NoError(t, db.InsertBatch(ctx, docs))
	require.NoError(t, db.Flush(ctx))
	require.Greater(t, db.MemoryBudget().Directories, w, "more blocks, more directory")
	w = db.MemoryBudget().Directories
	b = blocks(db)
	require.NoError(t, db.Close())

	ro := o
	ro.ReadOnly = true
	db = openT(t, dir, ro)
	defer db.Close()
	r := db.MemoryBudget().Directories
	require.GreaterOrEqual(t, r, least*b)
	require.Less(t, r, w, "read-only counts the tables once")
	t.Logf("%d blocks: directories %d bytes writable, %d read-only", b, w, r)
}
