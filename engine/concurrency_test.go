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
