package engine

import (
	"encoding/binary"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestFormat3Index opens an index that the build before codec version 3
// wrote (testdata/format3: corpus(600, 21), 500 bulk-loaded and 100
// inserted and flushed; index format 3, table blocks of codec version 2):
// it answers as the oracle, stats and Check say which versions it holds,
// and a flush writes new blocks in version 3 beside the old ones and
// makes the index format 4, which the older build refuses.
func TestFormat3Index(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	copyDir(t, filepath.Join("testdata", "format3", "pebble"), filepath.Join(dir, "pebble"))
	copyDir(t, filepath.Join("testdata", "format3", "wal"), filepath.Join(dir, "wal"))
	docs := corpus(600, 21)
	model := oracleOf(docs)
	r := rand.New(rand.NewPCG(21, 1))
	qs := queries(model, 3, 100, r)

	db := openT(t, dir, Options{ReadOnly: true})
	checkQueries(t, db, model, qs, "format 3, read-only")
	st, err := db.Stats(ctx)
	require.NoError(t, err)
	blocks := 0
	for _, ts := range st.Tables {
		blocks += ts.Blocks
	}
	assert.Equal(t, map[string]int{"1-2": blocks}, st.BlockVersions)
	rep, err := db.Check(ctx)
	require.NoError(t, err)
	assert.Equal(t, map[string]int64{"2": int64(blocks)}, rep.BlockVersions)
	require.NoError(t, db.Close())

	db = openT(t, dir, testOptions())
	more := corpus(900, 22)[:300]
	for i := range more {
		more[i].ID += 1 << 32
		model[more[i].ID] = more[i]
	}
	require.NoError(t, db.InsertBatch(ctx, more))
	require.NoError(t, db.Delete(ctx, docs[7].ID))
	delete(model, docs[7].ID)
	require.NoError(t, db.Flush(ctx))
	v, err := db.getMeta(format.MetaFormat)
	require.NoError(t, err)
	assert.Equal(t, format.VersionFor(false), binary.BigEndian.Uint32(v), "a flush makes the index the newest format without sketches")
	qs = queries(model, 3, 100, r)
	checkQueries(t, db, model, qs, "after a flush into format 3 blocks")
	st, err = db.Stats(ctx)
	require.NoError(t, err)
	assert.Positive(t, st.BlockVersions["3"], "rewritten blocks")
	assert.Positive(t, st.BlockVersions["1-2"], "blocks the flush did not touch")
	rep, err = db.Check(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(st.BlockVersions["3"]), rep.BlockVersions["3"])
	assert.Equal(t, int64(st.BlockVersions["1-2"]), rep.BlockVersions["2"])
	require.NoError(t, db.Close())

	db = openT(t, dir, Options{})
	defer db.Close()
	checkQueries(t, db, model, qs, "reopened")
}
