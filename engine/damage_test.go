package engine

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"

	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDamagedBlock: a flipped byte of a table block on the disk is caught
// by the store's block checksum (a table block has no checksum of its
// own): a query that reads the block, or a neighbour in the same block of
// the store's file, fails with the table and block it read, never a wrong
// answer; one that does not answers as the oracle; Check fails.
func TestDamagedBlock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	docs := corpus(3000, 4)
	require.NoError(t, db.Load(ctx, DocsOf(docs)))
	key := db.st.tables[1].Key(3)
	v, c, err := db.store.Get(format.TableKey(format.SpaceTables, 1, key))
	require.NoError(t, err)
	block := slices.Clone(v)
	c.Close()
	require.NoError(t, db.Close())
	flipInFiles(t, filepath.Join(dir, store.Dir), block, len(block)/2)

	db = openT(t, dir, Options{})
	defer db.Close()
	_, err = db.Check(ctx)
	require.ErrorIs(t, err, ErrCorrupt)
	o := oracleOf(docs)
	var hit, miss, the bool
	for _, d := range docs {
		got, err := db.Query(ctx, d.Fingerprint, 3)
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt)
			require.True(t, pebble.IsCorruptionError(err), "the store's checksum: %v", err)
			var be *BlockError
			require.ErrorAs(t, err, &be)
			assert.Equal(t, 1, be.Table)
			the = the || be.Block == key
			hit = true
		} else {
			require.Equal(t, o.query(d.Fingerprint, 3), got)
			miss = true
		}
	}
	assert.True(t, hit && miss && the, "queries failed (%v), answered (%v), named the damaged block (%v)", hit, miss, the)
}

// flipInFiles flips a bit of byte at of the one file under dir that holds
// data, failing unless exactly one holds it.
func flipInFiles(t *testing.T, dir string, data []byte, at int) {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*"))
	require.NoError(t, err)
	found := 0
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		if i := bytes.Index(b, data); i >= 0 {
			b[i+at] ^= 0x10
			require.NoError(t, os.WriteFile(f, b, 0o644))
			found++
		}
	}
	require.Equal(t, 1, found, "files holding the block")
}

// TestRewrittenBlock: a table block rewritten through the store (a bug of
// a writer, not the disk: every checksum holds) is caught by Check, which
// counts each table's fingerprints against the postings.
func TestRewrittenBlock(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	require.NoError(t, db.Load(ctx, DocsOf(corpus(3000, 4))))
	key := db.st.tables[1].Key(3)
	v, c, err := db.store.Get(format.TableKey(format.SpaceTables, 1, key))
	require.NoError(t, err)
	bad := slices.Clone(v)
	c.Close()
	bad[len(bad)/2] ^= 0x10
	setRaw(t, db, format.TableKey(format.SpaceTables, 1, key), bad)
	require.NoError(t, db.Close())

	db = openT(t, dir, Options{})
	defer db.Close()
	_, err = db.Check(ctx)
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), "table 1")
}

func TestDamagedWAL(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	require.NoError(t, db.Load(ctx, DocsOf(corpus(3000, 5))))
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
	require.ErrorIs(t, err, ErrCorrupt, "a missing file is damage")
	named := false
	for _, s := range ssts {
		named = named || strings.Contains(err.Error(), strings.TrimSuffix(filepath.Base(s), ".sst"))
	}
	assert.True(t, named, "the error names a missing file: %v", err)
}

// TestDamagedPendingList: an index whose pending list is damaged still
// opens; Check, and a query that reads the list, report it with its place,
// and queries elsewhere answer.
func TestDamagedPendingList(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(8, 8))
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	docs := corpus(3000, 9)
	require.NoError(t, db.Load(ctx, DocsOf(docs)))
	var batch []Doc
	for i := range 40 {
		batch = append(batch, Doc{ID: 1<<40 + uint64(i), Fingerprint: r.Uint64()})
	}
	require.NoError(t, db.InsertBatch(ctx, batch))
	require.NoError(t, db.Flush(ctx))
	ti := db.st.tables[1]
	j := slices.IndexFunc(pendingCounts(&ti), func(n uint16) bool { return n > 0 })
	require.GreaterOrEqual(t, j, 0)
	key := ti.Key(j)
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
