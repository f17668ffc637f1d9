package engine

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDamagedBlock(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	docs := corpus(3000, 4)
	require.NoError(t, db.Load(ctx, docs))
	st := db.st
	key := st.tables[1].Keys[3]
	// Flip one bit of the stored block, behind the engine's back.
	v, c, err := db.store.DB.Get(format.TableKey(format.SpaceTables, 1, key))
	require.NoError(t, err)
	bad := append([]byte(nil), v...)
	c.Close()
	bad[len(bad)/2] ^= 0x10
	setRaw(t, db, format.TableKey(format.SpaceTables, 1, key), bad)
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
			require.ErrorIs(t, err, codec.ErrCorrupt, "the codec's error is kept")
			assert.Contains(t, err.Error(), "checksum")
			var be *BlockError
			require.ErrorAs(t, err, &be)
			assert.Equal(t, 1, be.Table)
			assert.Equal(t, key, be.Block)
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

// TestDamagedPendingList: an index whose pending list is damaged still
// opens; Check, and a query that reads the list, report it with its place,
// and queries elsewhere answer.
func TestDamagedPendingList(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 8))
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	docs := corpus(3000, 9)
	require.NoError(t, db.Load(ctx, docs))
	var batch []Doc
	for i := range 40 {
		batch = append(batch, Doc{ID: 1<<40 + uint64(i), Fingerprint: r.Uint64()})
	}
	require.NoError(t, db.InsertBatch(ctx, batch))
	require.NoError(t, db.Flush(ctx))
	ti := db.st.tables[1]
	j := slices.IndexFunc(ti.Pend, func(n uint16) bool { return n > 0 })
	require.GreaterOrEqual(t, j, 0)
	key := ti.Keys[j]
	setRaw(t, db, format.TableKey(format.SpacePending, 1, key), []byte{1, 2, 3})
	require.NoError(t, db.Close())

	db = openT(t, dir, testOptions())
	defer db.Close()
	_, err := db.Check(ctx)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), fmt.Sprintf("table 1 block %016x", key))
	var hit, miss bool
	for _, d := range append(docs, batch...) {
		if _, err := db.Query(ctx, d.Fingerprint, 3); err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			require.Contains(t, err.Error(), "pending list")
			hit = true
		} else {
			miss = true
		}
	}
	require.True(t, hit && miss)
}
