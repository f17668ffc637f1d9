package engine

import (
	"cmp"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func collect(t *testing.T, seq func(yield func(Doc, error) bool)) []Doc {
	t.Helper()
	var out []Doc
	for d, err := range seq {
		require.NoError(t, err)
		out = append(out, d)
	}
	return out
}

// TestSnapshot: a snapshot's documents are the oracle's of its moment,
// by id (Docs) and by fingerprint then id (DocsByFingerprint), with and
// without sketches, flushed, in the memtable, deleted and replaced; the
// same again after writes, a flush and their sequences read many times;
// ErrClosed once closed.
func TestSnapshot(t *testing.T) {
	t.Parallel()
	for _, size := range []int{0, 32} {
		docs := corpus(1200, 43)
		if size > 0 {
			docs = sketched(docs, size, 43)
		}
		opts := testOptions()
		opts.SketchSize = size
		db := openT(t, t.TempDir(), opts)
		third := len(docs) / 3
		require.NoError(t, db.InsertBatch(ctx, docs[:2*third]))
		require.NoError(t, db.Flush(ctx))
		require.NoError(t, db.InsertBatch(ctx, docs[2*third:]))
		model := oracleOf(docs)
		// Deleted and replaced, flushed documents and memtable ones alike.
		for i := 0; i < len(docs); i += 7 {
			require.NoError(t, db.Delete(ctx, docs[i].ID))
			delete(model, docs[i].ID)
		}
		for i := 3; i < len(docs); i += 11 {
			d := docs[i]
			d.Fingerprint ^= 0x5
			d.Name = "replaced"
			require.NoError(t, db.Insert(ctx, d))
			model[d.ID] = d
		}
		byID := slices.SortedFunc(func(yield func(Doc) bool) {
			for _, d := range model {
				if !yield(d) {
					return
				}
			}
		}, func(a, b Doc) int { return cmp.Compare(a.ID, b.ID) })
		byFP := slices.Clone(byID)
		slices.SortFunc(byFP, func(a, b Doc) int { return cmp.Or(cmp.Compare(a.Fingerprint, b.Fingerprint), cmp.Compare(a.ID, b.ID)) })

		s, err := db.Snapshot()
		require.NoError(t, err)
		assert.Equal(t, byID, collect(t, db.Docs(ctx)), "DB.Docs, sketch size %d", size)
		assert.Equal(t, byID, collect(t, s.Docs(ctx)), "sketch size %d", size)
		assert.Equal(t, byFP, collect(t, s.DocsByFingerprint(ctx)), "sketch size %d", size)
		// Writes and a flush after the snapshot are not in it.
		for i := 0; i < 50; i++ {
			require.NoError(t, db.Delete(ctx, byID[i].ID))
		}
		require.NoError(t, db.Insert(ctx, Doc{ID: 1 << 40, Fingerprint: 1, Sketch: string(make([]byte, size))}))
		require.NoError(t, db.Flush(ctx))
		assert.Equal(t, byFP, collect(t, s.DocsByFingerprint(ctx)), "after writes, sketch size %d", size)
		assert.Equal(t, byID, collect(t, s.Docs(ctx)), "after writes, sketch size %d", size)
		// A sequence stopped early.
		n := 0
		for _, err := range s.DocsByFingerprint(ctx) {
			require.NoError(t, err)
			if n++; n == 10 {
				break
			}
		}
		require.NoError(t, s.Close())
		require.NoError(t, s.Close(), "twice")
		for _, err := range s.Docs(ctx) {
			require.ErrorIs(t, err, ErrClosed)
		}
		require.NoError(t, db.Close())
	}
}
