package engine

import (
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sketched gives each of docs a sketch of size bytes: random ones, with
// zero bytes, an all-zero and an all-ones sketch among them.
func sketched(docs []Doc, size int, seed uint64) []Doc {
	r := rand.New(rand.NewPCG(seed, 7))
	out := make([]Doc, len(docs))
	for i, d := range docs {
		b := make([]byte, size)
		switch i % 5 {
		case 0: // all zeros
		case 1:
			for j := range b {
				b[j] = 0xff
			}
		default:
			for j := range b {
				b[j] = byte(r.IntN(4)) * 85 // 0, 85, 170, 255: zero bytes often
			}
		}
		d.Sketch = string(b)
		out[i] = d
	}
	return out
}

// TestSketchesKept: an index with sketches returns each document's sketch
// with it from every read (Get, Query, QueryAppend, QueryBatch, FindAll,
// Clusters, Docs), from the memtable, after a flush, after a replay of
// the log, and after a bulk load, exactly as the oracle has them.
func TestSketchesKept(t *testing.T) {
	t.Parallel()
	const size = 32
	docs := sketched(corpus(900, 41), size, 41)
	r := rand.New(rand.NewPCG(41, 1))
	opts := testOptions()
	opts.SketchSize = size
	dir := t.TempDir()
	db := openT(t, dir, opts)
	assert.Equal(t, size, db.SketchSize())
	half := len(docs) / 2
	require.NoError(t, db.InsertBatch(ctx, docs[:half]))
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.InsertBatch(ctx, docs[half:]))
	model := oracleOf(docs)
	qs := queries(model, 3, 60, r)
	checkQueries(t, db, model, qs, "flushed and in the memtable")
	got, err := db.Get(ctx, docs[3].ID)
	require.NoError(t, err)
	assert.Equal(t, docs[3], got)
	require.NoError(t, db.Close())

	db = openT(t, dir, Options{}) // the size comes from the index
	assert.Equal(t, size, db.SketchSize())
	checkQueries(t, db, model, qs, "replayed")
	require.NoError(t, db.Flush(ctx))
	checkQueries(t, db, model, qs, "all flushed")
	_, err = db.Check(ctx)
	require.NoError(t, err)
	v, err := db.getMeta(format.MetaFormat)
	require.NoError(t, err)
	assert.Equal(t, uint32(5), binary.BigEndian.Uint32(v), "an index with sketches is version 5")
	require.NoError(t, db.Close())

	// A bulk load sorted in memory, and one sorted in runs on disk.
	for _, memory := range []int64{0, 16 << 10} {
		opts.knobs.loadMemory = memory
		loaded := openT(t, t.TempDir(), opts)
		require.NoError(t, loaded.Load(ctx, DocsOf(docs)))
		checkQueries(t, loaded, model, qs, fmt.Sprintf("bulk loaded, memory %d", memory))
		got, err := loaded.Get(ctx, docs[3].ID)
		require.NoError(t, err)
		assert.Equal(t, docs[3], got)
		_, err = loaded.Check(ctx)
		require.NoError(t, err)
		require.NoError(t, loaded.Close())
	}
}

// TestSketchRules: a sketch must have the index's size; an index without
// sketches refuses one and stays version 4; the size is fixed at creation;
// a version 5 index without its size is damage.
func TestSketchRules(t *testing.T) {
	t.Parallel()
	opts := testOptions()
	opts.SketchSize = 32
	dir := t.TempDir()
	db := openT(t, dir, opts)
	for _, d := range []Doc{{ID: 1, Fingerprint: 1}, {ID: 1, Fingerprint: 1, Sketch: "short"}} {
		err := db.Insert(ctx, d)
		require.ErrorIs(t, err, ErrInput)
		assert.Contains(t, err.Error(), "document 1: a sketch of")
		assert.Contains(t, err.Error(), "keeps one of 32")
		require.ErrorIs(t, db.Load(ctx, DocsOf([]Doc{d})), ErrInput)
	}
	require.NoError(t, db.Close())
	_, err := Open(dir, Options{SketchSize: 16})
	require.ErrorIs(t, err, ErrOptions)
	assert.Contains(t, err.Error(), "keeps sketches of 32 bytes, opened with SketchSize = 16")
	_, err = Open(t.TempDir(), Options{SketchSize: MaxSketch + 1})
	require.ErrorIs(t, err, ErrOptions)

	plain := t.TempDir()
	db = openT(t, plain, testOptions())
	err = db.Insert(ctx, Doc{ID: 1, Fingerprint: 1, Sketch: "abcd"})
	require.ErrorIs(t, err, ErrInput)
	assert.Contains(t, err.Error(), "this index keeps none")
	require.NoError(t, db.Insert(ctx, Doc{ID: 1, Fingerprint: 1, Name: "a"}))
	require.NoError(t, db.Flush(ctx))
	assert.Zero(t, db.SketchSize())
	v, err := db.getMeta(format.MetaFormat)
	require.NoError(t, err)
	assert.Equal(t, uint32(4), binary.BigEndian.Uint32(v), "an index without sketches stays version 4")
	require.NoError(t, db.Close())

	// Version 5 without a sketch size, and version 4 with one: refused.
	for _, c := range []struct {
		dir   string
		apply func(b *store.Batch) error
	}{
		{dir, func(b *store.Batch) error { return b.Delete(format.MetaSketch) }},
		{plain, func(b *store.Batch) error { return b.Set(format.MetaSketch, format.UvarintValue(32)) }},
	} {
		db = openT(t, c.dir, Options{})
		b := db.store.NewBatch()
		require.NoError(t, c.apply(b))
		require.NoError(t, db.store.Commit(ctx, db.store.BatchWrites(b)))
		require.NoError(t, db.Close())
		_, err = Open(c.dir, Options{})
		require.ErrorIs(t, err, ErrCorrupt)
		assert.Contains(t, err.Error(), "sketch size stored")
	}
}
