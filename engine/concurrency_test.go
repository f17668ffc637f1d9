package engine

import (
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentReadersWriters: writers insert while readers query; a
// document acknowledged before a query starts must be in its answer, and
// flushes run underneath. Meant for go test -race.
func TestConcurrentReadersWriters(t *testing.T) {
	db := openT(t, t.TempDir(), Options{Expected: 1 << 12, MemtableSize: 16 << 10, Sync: SyncInterval})
	defer db.Close()
	const writers, each = 4, 300
	var acked [writers]atomic.Int64 // documents 0..acked-1 of writer w are acknowledged
	fpOf := func(w, i int) uint64 { return rand.New(rand.NewPCG(uint64(w), uint64(i))).Uint64() }
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				assert.NoError(t, db.Insert(ctx, Doc{ID: uint64(w*each + i), Fingerprint: fpOf(w, i)}))
				acked[w].Store(int64(i + 1))
			}
		}()
	}
	done := make(chan struct{})
	var rg sync.WaitGroup
	for rd := range 3 {
		rg.Add(1)
		go func() {
			defer rg.Done()
			r := rand.New(rand.NewPCG(99, uint64(rd)))
			for {
				select {
				case <-done:
					return
				default:
				}
				w := r.IntN(writers)
				n := acked[w].Load()
				if n == 0 {
					continue
				}
				i := r.IntN(int(n))
				m, err := db.Query(ctx, fpOf(w, i)^1, 1)
				if !assert.NoError(t, err) {
					return
				}
				assert.Contains(t, m, Match{Doc{ID: uint64(w*each + i), Fingerprint: fpOf(w, i)}, 1})
			}
		}()
	}
	wg.Wait()
	close(done)
	rg.Wait()
	require.NoError(t, db.Flush(ctx))
	_, err := db.Check(ctx)
	require.NoError(t, err)
}

func TestDamagedBlock(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	docs := corpus(3000, 4)
	require.NoError(t, db.Load(ctx, docs))
	st := db.st
	key := st.tables[1].keys[3]
	// Flip one bit of the stored block, behind the engine's back.
	v, c, err := db.pdb.Get(tableKey(spaceTables, 1, key))
	require.NoError(t, err)
	bad := append([]byte(nil), v...)
	c.Close()
	bad[len(bad)/2] ^= 0x10
	require.NoError(t, db.pdb.Set(tableKey(spaceTables, 1, key), bad, pebble.Sync))
	require.NoError(t, db.Close())

	db = openT(t, dir, Options{})
	defer db.Close()
	_, err = db.Check(ctx)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), "table 1 block")
	// A query that reads the block fails with the location, never a wrong
	// answer; one that doesn't is unaffected.
	var hit, miss bool
	for _, d := range docs {
		_, err := db.Query(ctx, d.Fingerprint, 3)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			assert.Contains(t, err.Error(), "checksum")
			hit = true
		} else {
			miss = true
		}
	}
	assert.True(t, hit && miss)
}

func TestDamagedWAL(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	for i := range 20 {
		require.NoError(t, db.Insert(ctx, Doc{ID: uint64(i), Fingerprint: uint64(i) * 0x9e3779b97f4a7c15}))
	}
	require.NoError(t, db.Close())
	segs, err := filepath.Glob(filepath.Join(dir, "wal", "*.wal"))
	require.NoError(t, err)
	var path string
	for _, s := range segs {
		if st, _ := os.Stat(s); st.Size() > 100 {
			path = s
		}
	}
	require.NotEmpty(t, path)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[40] ^= 0xff
	require.NoError(t, os.WriteFile(path, b, 0o644))
	_, err = Open(dir, Options{})
	require.Error(t, err)
	assert.Contains(t, err.Error(), filepath.Base(path))
	assert.Contains(t, err.Error(), "offset")
}

func TestMissingFile(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	require.NoError(t, db.Load(ctx, corpus(3000, 5)))
	require.NoError(t, db.Close())
	ssts, err := filepath.Glob(filepath.Join(dir, "pebble", "*.sst"))
	require.NoError(t, err)
	require.NotEmpty(t, ssts)
	for _, s := range ssts {
		require.NoError(t, os.Remove(s))
	}
	db, err = Open(dir, Options{})
	if err == nil {
		_, err = db.Check(ctx)
		db.Close()
	}
	require.Error(t, err)
	named := false
	for _, s := range ssts {
		named = named || strings.Contains(err.Error(), strings.TrimSuffix(filepath.Base(s), ".sst"))
	}
	assert.True(t, named || errors.Is(err, ErrCorrupt), "the error names a missing file: %v", err)
}

func TestOptionsAgainstStoredIndex(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	require.NoError(t, db.Close())
	_, err := Open(dir, Options{K: 4})
	require.ErrorIs(t, err, ErrOptions)
	assert.Contains(t, err.Error(), "K = 3")
	_, err = Open(dir, Options{BlockSize: 4096})
	require.ErrorIs(t, err, ErrOptions)
	_, err = Open(t.TempDir(), Options{ReadOnly: true})
	require.Error(t, err)
	_, err = Open(t.TempDir(), Options{K: -1})
	require.ErrorIs(t, err, ErrOptions)
	db = openT(t, dir, Options{ReadOnly: true})
	defer db.Close()
	require.ErrorIs(t, db.Insert(ctx, Doc{ID: 1}), ErrReadOnly)
	_, err = db.Query(ctx, 0, 4)
	require.ErrorIs(t, err, ErrDistance)
	_, err = db.Get(ctx, 1)
	require.ErrorIs(t, err, ErrNotFound)
}

func TestInsertIfNew(t *testing.T) {
	db := openT(t, t.TempDir(), testOptions())
	defer db.Close()
	m, ok, err := db.InsertIfNew(ctx, Doc{ID: 1, Fingerprint: 0xff00, Name: "a"}, 3)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Empty(t, m)
	m, ok, err = db.InsertIfNew(ctx, Doc{ID: 2, Fingerprint: 0xff07, Name: "b"}, 3)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, []Match{{Doc{1, 0xff00, "a"}, 3}}, m)
	// Many crawlers offer near-duplicates at once: exactly one wins.
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := db.InsertIfNew(ctx, Doc{ID: uint64(10 + i), Fingerprint: 1<<40 | uint64(i&1)}, 2)
			assert.NoError(t, err)
			if ok {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(1), wins.Load())
	require.ErrorIs(t, db.Insert(ctx, Doc{ID: 5, Name: strings.Repeat("x", MaxName+1)}), ErrInput)
}

// TestMemtableBudget: a memtable size the caller sets is kept; the default
// grows with the index, 5 bytes per fingerprint, between 64 MiB and
// 1 GiB. Stats reports the budget in force.
func TestMemtableBudget(t *testing.T) {
	for _, tc := range []struct {
		name string
		set  int64
		fps  int64
		want int64
	}{
		{"default, small index", 0, 1e6, DefaultMemtableSize},
		{"default, 100M", 0, 1e8, 500e6},
		{"default, capped", 0, 1e10, maxAutoMemtable},
		{"set, small index", 8 << 20, 0, 8 << 20},
		{"set, 100M", 8 << 20, 1e8, 8 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o, err := Options{MemtableSize: tc.set}.withDefaults()
			require.NoError(t, err)
			assert.Equal(t, tc.want, o.memtableBudget(tc.fps))
		})
	}
	db := openT(t, t.TempDir(), Options{Sync: SyncNone})
	defer db.Close()
	require.NoError(t, db.Load(ctx, corpus(300, 1)))
	s, err := db.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(DefaultMemtableSize), s.MemtableBudget)
}

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
