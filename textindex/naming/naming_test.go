package naming

import (
	"context"
	"testing"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func openIndex(t *testing.T) *engine.DB {
	t.Helper()
	d, err := permutation.Blocks(3, 4)
	require.NoError(t, err)
	db, err := engine.Open(t.TempDir(), engine.Options{Design: d, Sync: engine.SyncNone})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	return db
}

func TestHashedNames(t *testing.T) {
	ctx := context.Background()
	db := openIndex(t)
	ids, err := New(ctx, db, true) // empty: hashes from now on
	require.NoError(t, err)
	a, what, err := ids.ID(ctx, "a.txt", 1, "")
	require.NoError(t, err)
	assert.Equal(t, Added, what)
	assert.Less(t, a, uint64(1)<<53)
	b, _, err := ids.ID(ctx, "b.txt", 2, "")
	require.NoError(t, err)
	assert.NotEqual(t, a, b)
	require.NoError(t, db.InsertBatch(ctx, []engine.Doc{{ID: a, Fingerprint: 1, Name: "a.txt"}, {ID: b, Fingerprint: 2, Name: "b.txt"}}))
	assert.Equal(t, "2 added, 0 replaced, 0 unchanged", ids.Summary())

	// A second run: the same names get the same ids.
	ids, err = New(ctx, db, true)
	require.NoError(t, err)
	id, what, err := ids.ID(ctx, "a.txt", 1, "")
	require.NoError(t, err)
	assert.Equal(t, []any{a, Unchanged}, []any{id, what})
	id, what, err = ids.ID(ctx, "b.txt", 3, "")
	require.NoError(t, err)
	assert.Equal(t, []any{b, Replaced}, []any{id, what})
	id, what, err = ids.ID(ctx, "c.txt", 3, "")
	require.NoError(t, err)
	assert.Equal(t, Added, what)
	assert.NotContains(t, []uint64{a, b}, id)
	assert.Equal(t, "1 added, 1 replaced, 1 unchanged", ids.Summary())
}

// TestCollision: a name whose hashed id holds another name's document
// takes the next free id.
func TestCollision(t *testing.T) {
	ctx := context.Background()
	db := openIndex(t)
	ids, err := New(ctx, db, true)
	require.NoError(t, err)
	a, _, err := ids.ID(ctx, "a.txt", 1, "")
	require.NoError(t, err)
	require.NoError(t, db.Delete(ctx, a))
	require.NoError(t, db.Insert(ctx, engine.Doc{ID: a, Fingerprint: 9, Name: "other"}))
	ids, err = New(ctx, db, true)
	require.NoError(t, err)
	id, what, err := ids.ID(ctx, "a.txt", 1, "")
	require.NoError(t, err)
	assert.Equal(t, []any{a + 1, Added}, []any{id, what})
}

// TestInOrder: an index with documents and no naming setting gave ids in
// order; New reads its names, or refuses with hashedOnly.
func TestInOrder(t *testing.T) {
	ctx := context.Background()
	db := openIndex(t)
	require.NoError(t, db.InsertBatch(ctx, []engine.Doc{{ID: 1, Fingerprint: 1, Name: "a.txt"}, {ID: 2, Fingerprint: 2, Name: "b.txt"}}))
	_, err := New(ctx, db, true)
	require.ErrorIs(t, err, ErrInOrder)
	ids, err := New(ctx, db, false)
	require.NoError(t, err)
	id, what, err := ids.ID(ctx, "b.txt", 2, "")
	require.NoError(t, err)
	assert.Equal(t, []any{uint64(2), Unchanged}, []any{id, what})
	id, what, err = ids.ID(ctx, "new.txt", 5, "")
	require.NoError(t, err)
	assert.Equal(t, []any{uint64(3), Added}, []any{id, what})

	require.NoError(t, db.SetMeta(ctx, setting, []byte("other")))
	_, err = New(ctx, db, false)
	assert.ErrorContains(t, err, `naming setting "other"`)
}

// TestSketchChanges: in an index with sketches, a document whose
// fingerprint stays while its sketch changes (an edit too small to move
// the fingerprint) is replaced, not left as it is.
func TestSketchChanges(t *testing.T) {
	ctx := context.Background()
	db, err := engine.Open(t.TempDir(), engine.Options{SizeHint: 1 << 10, SketchSize: 2})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	require.NoError(t, Init(ctx, db))
	ids, err := New(ctx, db, false)
	require.NoError(t, err)
	a, _, err := ids.ID(ctx, "a.txt", 1, "ab")
	require.NoError(t, err)
	require.NoError(t, db.Insert(ctx, engine.Doc{ID: a, Fingerprint: 1, Name: "a.txt", Sketch: "ab"}))
	ids, err = New(ctx, db, false)
	require.NoError(t, err)
	_, what, err := ids.ID(ctx, "a.txt", 1, "ab")
	require.NoError(t, err)
	assert.Equal(t, Unchanged, what)
	ids, err = New(ctx, db, false)
	require.NoError(t, err)
	_, what, err = ids.ID(ctx, "a.txt", 1, "ac")
	require.NoError(t, err)
	assert.Equal(t, Replaced, what, "the same fingerprint, another sketch")
}
