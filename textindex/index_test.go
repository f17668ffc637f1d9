package textindex

import (
	"errors"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/sketch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIndex: Open makes a text index that keeps its schema; text added as
// strings and readers is found by Similar, InsertIfNew, Pairs and
// Clusters, verified; reopened, it reads text by its schema; another
// schema is refused; an index of fingerprints needs one and answers by
// distance.
func TestIndex(t *testing.T) {
	r := rand.New(rand.NewPCG(12, 13))
	// texts[0] an original; [1], [2], [3] copies with one word in 200,
	// 60 and 5 changed; [4] another original.
	texts := corpus(r)
	dir := t.TempDir()
	ix, err := Open(ctx, dir, engine.Options{SizeHint: 1 << 10}, nil)
	require.NoError(t, err)
	assert.Equal(t, NewSchema(), ix.Schema())
	assert.True(t, Sketched(ix.DB))
	assert.Equal(t, K, ix.DB.K())
	require.NoError(t, ix.AddString(ctx, 1, "page", texts[0]))
	require.NoError(t, ix.Add(ctx, 2, "other", strings.NewReader(texts[4])))

	ms, err := ix.Similar(ctx, strings.NewReader(texts[1]), DefaultSimilarity)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, "page", ms[0].Name)
	assert.Greater(t, ms[0].Similarity, 0.8)
	dups, inserted, err := ix.InsertIfNew(ctx, 3, "copy", strings.NewReader(texts[1]), DefaultSimilarity)
	require.NoError(t, err)
	assert.False(t, inserted)
	assert.Equal(t, uint64(1), dups[0].ID)
	_, inserted, err = ix.InsertIfNew(ctx, 3, "edited", strings.NewReader(texts[3]), DefaultSimilarity)
	require.NoError(t, err)
	assert.True(t, inserted, "every fifth word changed: not a near-duplicate")
	require.NoError(t, ix.AddString(ctx, 4, "copy", texts[1]))
	n := 0
	for p, err := range ix.Pairs(ctx, DefaultSimilarity) {
		require.NoError(t, err)
		assert.Equal(t, [2]uint64{1, 4}, [2]uint64{p.A.ID, p.B.ID})
		n++
	}
	assert.Equal(t, 1, n)
	for c, err := range ix.Clusters(ctx, DefaultSimilarity) {
		require.NoError(t, err)
		assert.Len(t, c, 2)
	}
	require.NoError(t, ix.Close())

	ix, err = Open(ctx, dir, engine.Options{}, nil)
	require.NoError(t, err)
	assert.Equal(t, NewSchema(), ix.Schema(), "the schema it keeps")
	require.NoError(t, ix.Close())
	other := NewSchema()
	other.Shingle = 2
	_, err = Open(ctx, dir, engine.Options{}, &other)
	require.ErrorIs(t, err, engine.ErrOptions)

	// An index of fingerprints: a schema must be given; answers by distance.
	plain := t.TempDir()
	db, err := engine.Open(plain, engine.Options{SizeHint: 1 << 10})
	require.NoError(t, err)
	require.NoError(t, db.Close())
	_, err = Open(ctx, plain, engine.Options{}, nil)
	require.True(t, errors.Is(err, ErrNoSchema), "%v", err)
	ix, err = Open(ctx, plain, engine.Options{}, &other)
	require.NoError(t, err)
	defer ix.Close()
	require.NoError(t, ix.AddString(ctx, 1, "page", texts[0]))
	ms, err = ix.Similar(ctx, strings.NewReader(texts[0]), DefaultSimilarity)
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Zero(t, ms[0].Similarity, "no sketch: by distance")
	assert.Empty(t, ms[0].Sketch)
}

// TestSketchKind: an index whose sketches are of another kind than this
// build makes is refused, not compared with new sketches.
func TestSketchKind(t *testing.T) {
	dir := t.TempDir()
	ix, err := Open(ctx, dir, engine.Options{SizeHint: 1 << 10}, nil)
	require.NoError(t, err)
	assert.Equal(t, sketch.Kind, ix.Schema().Sketch)
	other := ix.Schema()
	other.Sketch = "an older kind"
	require.NoError(t, other.Store(ctx, ix.DB))
	require.NoError(t, ix.Close())
	_, err = Open(ctx, dir, engine.Options{}, nil)
	require.ErrorIs(t, err, ErrSketchKind)
	assert.Contains(t, err.Error(), "an older kind, this build's "+sketch.Kind)
}
