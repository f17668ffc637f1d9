package engine

import (
	"runtime/debug"
	"testing"

	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/internal/memlimit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOptionsAgainstStoredIndex(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	require.NoError(t, db.Close())
	_, err := Open(dir, Options{K: 4})
	require.ErrorIs(t, err, ErrOptions)
	assert.Contains(t, err.Error(), "K = 3")
	_, err = Open(dir, Options{BlockSize: 4096})
	require.ErrorIs(t, err, ErrOptions)
	exists, err := Exists(dir)
	require.NoError(t, err)
	require.True(t, exists)
	exists, err = Exists(t.TempDir())
	require.NoError(t, err)
	require.False(t, exists)
	_, err = Open(t.TempDir(), Options{ReadOnly: true})
	require.Error(t, err)
	_, err = Open(t.TempDir(), Options{K: -1})
	require.ErrorIs(t, err, ErrOptions)
	_, err = Open(t.TempDir(), Options{MemoryLimit: -1})
	require.ErrorIs(t, err, ErrOptions)
	assert.Contains(t, err.Error(), "MemoryLimit = -1")
	db = openT(t, dir, Options{ReadOnly: true})
	defer db.Close()
	require.ErrorIs(t, db.Insert(ctx, Doc{ID: 1}), ErrReadOnly)
	_, err = db.Query(ctx, 0, 4)
	require.ErrorIs(t, err, ErrDistance)
	_, err = db.Get(ctx, 1)
	require.ErrorIs(t, err, ErrNotFound)
}

// TestMemtableBudget: a memtable size the caller sets is kept; the default
// grows with the index, 5 bytes per fingerprint, between 64 MiB and
// 1 GiB, and no more than a sixteenth of the memory limit (but 4 MiB).
// Stats reports the budget in force.
func TestMemtableBudget(t *testing.T) {
	t.Parallel()
	const lots = 1 << 40 // memory enough for any budget
	for _, tc := range []struct {
		name  string
		set   int64
		fps   int64
		limit int64
		want  int64
	}{
		{"default, small index", 0, 1e6, lots, DefaultMemtableSize},
		{"default, 100M", 0, 1e8, lots, 500e6},
		{"default, capped", 0, 1e10, lots, maxAutoMemtable},
		{"default, 100M, 1 GiB of memory", 0, 1e8, 1 << 30, 64 << 20},
		{"default, 100M, 4 GiB of memory", 0, 1e8, 4 << 30, 256 << 20},
		{"default, small index, 256 MiB of memory", 0, 1e6, 256 << 20, 16 << 20},
		{"default, 32 MiB of memory", 0, 1e6, 32 << 20, minAutoMemtable},
		{"set, small index", 8 << 20, 0, lots, 8 << 20},
		{"set, 100M", 8 << 20, 1e8, lots, 8 << 20},
		{"set, 100M, 256 MiB of memory", 128 << 20, 1e8, 256 << 20, 128 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := Options{MemtableSize: tc.set}
			o.MemoryLimit = tc.limit
			o, err := o.withDefaults()
			require.NoError(t, err)
			assert.Equal(t, tc.want, o.memtableBudget(tc.fps))
		})
	}
	o := Options{Sync: SyncNone}
	o.MemoryLimit = lots
	db := openT(t, t.TempDir(), o)
	defer db.Close()
	require.NoError(t, db.Load(ctx, DocsOf(corpus(300, 1))))
	s, err := db.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(DefaultMemtableSize), s.MemtableBudget)
}

// TestOptionsGivenAsDefault: a K or block size given explicitly must match
// the index even when it equals the default (a K = 4 index opened with
// K = 3 is refused, not opened with another K than asked).
func TestOptionsGivenAsDefault(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	o := testOptions()
	o.K, o.BlockSize = 4, 2048
	db := openT(t, dir, o)
	require.NoError(t, db.Close())
	_, err := Open(dir, Options{K: DefaultK})
	require.ErrorIs(t, err, ErrOptions)
	assert.Contains(t, err.Error(), "built for K = 4, opened with K = 3")
	_, err = Open(dir, Options{BlockSize: codec.DefaultBlockSize})
	require.ErrorIs(t, err, ErrOptions)
	db = openT(t, dir, Options{}) // neither given: the index's
	defer db.Close()
	assert.Equal(t, 4, db.K())
}

func TestParseSyncMode(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]SyncMode{"always": SyncAlways, "interval": SyncInterval, "none": SyncNone} {
		got, err := ParseSyncMode(name)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	_, err := ParseSyncMode("sometimes")
	require.Error(t, err)
}

func TestMeta(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	_, err := db.Meta(ctx, "app.settings")
	require.ErrorIs(t, err, ErrNotFound)
	require.NoError(t, db.SetMeta(ctx, "app.settings", []byte(`{"shingle":1}`)))
	require.ErrorIs(t, db.SetMeta(ctx, "", nil), ErrInput)
	require.ErrorIs(t, db.SetMeta(ctx, "big", make([]byte, MaxMetaValue+1)), ErrInput)
	require.NoError(t, db.Close())
	db = openT(t, dir, Options{ReadOnly: true})
	defer db.Close()
	v, err := db.Meta(ctx, "app.settings")
	require.NoError(t, err)
	assert.Equal(t, `{"shingle":1}`, string(v))
	require.ErrorIs(t, db.SetMeta(ctx, "app.settings", nil), ErrReadOnly)
	_, err = db.Check(ctx)
	require.NoError(t, err, "a setting is not a table, document or code")
}

func TestLocked(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	defer db.Close()
	_, err := Open(dir, testOptions())
	require.ErrorIs(t, err, ErrLocked)
	_, err = Open(dir, Options{ReadOnly: true})
	require.ErrorIs(t, err, ErrLocked)
}

// The zero Options take a quarter of the memory limit, and Stats says what
// the budget resolved to.
func TestAutoCacheSize(t *testing.T) {
	want := int64(2<<30) / autoCacheShare
	if l := memlimit.Of(""); l > 0 && l < 2<<30 { // a machine or container smaller than that
		want = max(l/autoCacheShare, DefaultCacheSize/4)
	}
	old := debug.SetMemoryLimit(2 << 30)
	defer debug.SetMemoryLimit(old)
	require.Equal(t, want, autoCacheSize(memlimit.Of("")))
	db, err := Open(t.TempDir(), Options{})
	require.NoError(t, err)
	defer db.Close()
	st, err := db.Stats(t.Context())
	require.NoError(t, err)
	require.Equal(t, want, st.CacheSize)

	debug.SetMemoryLimit(64 << 20) // a quarter would be too little to be of use
	require.Equal(t, int64(DefaultCacheSize/4), autoCacheSize(memlimit.Of("")))
	require.Equal(t, int64(DefaultCacheSize), autoCacheSize(0), "no limit known")
}

func TestFitCacheSize(t *testing.T) {
	const mib = 1 << 20
	for _, c := range []struct {
		name        string
		limit, held int64
		want        int64
	}{
		{"no limit known", 0, 100 * mib, DefaultCacheSize},
		{"room for a quarter", 8 << 30, 1 << 30, 2 << 30},
		{"held leaves less than a quarter", 1 << 30, 300 * mib, 212 * mib},
		{"whole MiB", 1 << 30, 300*mib + 1, 211 * mib},
		{"held takes half", 512 * mib, 276 * mib, minFitCache},
		{"a limit smaller than the quarter's floor", 48 * mib, 0, 24 * mib},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, fitCacheSize(c.limit, c.held))
		})
	}
}

// The default cache yields to the memtables and the directories as the
// index grows, so that the three stay within half the memory limit, and
// the engine's cache and Pebble's share what is left; a cache the caller
// sized stays as it is.
func TestCacheFitsDirectories(t *testing.T) {
	const limit = 128 << 20
	for _, c := range []struct {
		name  string
		cache int64
	}{{"default", 0}, {"given", 64 << 20}} {
		t.Run(c.name, func(t *testing.T) {
			o := testOptions()
			o.MemtableSize, o.CacheSize, o.BlockSize = 0, c.cache, 64 // small blocks: many directory entries
			o.MemoryLimit = limit
			db := openT(t, t.TempDir(), o)
			defer db.Close()
			check := func(stage string) MemoryBudget {
				b := db.MemoryBudget()
				want := c.cache
				if c.cache == 0 {
					want = fitCacheSize(limit, b.Memtables+b.Directories)
					require.Less(t, want, autoCacheSize(limit), stage)
				}
				require.Equal(t, want, b.Cache, "%s: %+v", stage, b)
				require.LessOrEqual(t, b.PebbleCache, db.budget.Most(), stage)
				require.Equal(t, db.budget.Engine(b.PebbleCache), db.cache.Budget(), stage)
				return b
			}
			check("empty")
			require.NoError(t, db.Load(ctx, DocsOf(corpus(20000, 41))))
			loaded := check("loaded")
			docs := corpus(150000, 42)
			for i := range docs {
				docs[i].ID += 1 << 40
			}
			require.NoError(t, db.InsertBatch(ctx, docs))
			require.NoError(t, db.Flush(ctx))
			grown := check("grown")
			require.Greater(t, grown.Directories, loaded.Directories+1<<20)
			if c.cache == 0 {
				require.Less(t, grown.Cache, loaded.Cache, "the cache gave way to the directories")
			}
		})
	}
}
