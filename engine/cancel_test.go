package engine

import (
	"context"
	"iter"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCanceled: every call given a context already done returns its error
// (a stream yields it) and changes nothing.
func TestCanceled(t *testing.T) {
	t.Parallel()
	db := openT(t, t.TempDir(), testOptions())
	require.NoError(t, db.Load(ctx, DocsOf(corpus(500, 1))))
	require.NoError(t, db.Insert(ctx, Doc{ID: 1000, Fingerprint: 7, Name: "in the memtable"}))
	before, err := db.Stats(ctx)
	require.NoError(t, err)
	done, cancel := context.WithCancel(ctx)
	cancel()
	first := func(seq iter.Seq2[Pair, error]) error {
		for _, err := range seq {
			return err
		}
		return nil
	}
	firstDocs := func(seq iter.Seq2[[]Doc, error]) error {
		for _, err := range seq {
			return err
		}
		return nil
	}
	calls := map[string]func() error{
		"Get":      func() error { _, err := db.Get(done, 1); return err },
		"NextID":   func() error { _, err := db.NextID(done); return err },
		"Query":    func() error { _, err := db.Query(done, 7, 3); return err },
		"Stats":    func() error { _, err := db.Stats(done); return err },
		"Check":    func() error { _, err := db.Check(done); return err },
		"Meta":     func() error { _, err := db.Meta(done, "x"); return err },
		"SetMeta":  func() error { return db.SetMeta(done, "x", []byte("y")) },
		"Insert":   func() error { return db.Insert(done, Doc{ID: 2000, Fingerprint: 8}) },
		"Batch":    func() error { return db.InsertBatch(done, []Doc{{ID: 2001, Fingerprint: 9}}) },
		"Delete":   func() error { return db.Delete(done, 1) },
		"IfNew":    func() error { _, _, err := db.InsertIfNew(done, Doc{ID: 2002, Fingerprint: 1 << 40}, 3); return err },
		"Flush":    func() error { return db.Flush(done) },
		"Warm":     func() error { return db.Warm(done) },
		"FindAll":  func() error { return first(db.FindAll(done, 3)) },
		"Clusters": func() error { return firstDocs(db.Clusters(done, 3)) },
		"Stars":    func() error { return firstDocs(db.Stars(done, 3)) },
		"Docs": func() error {
			for _, err := range db.Docs(done) {
				return err
			}
			return nil
		},
		"QueryBatch": func() error {
			for _, err := range db.QueryBatch(done, []uint64{7}, 3) {
				return err
			}
			return nil
		},
	}
	for name, call := range calls {
		t.Run(name, func(t *testing.T) {
			require.ErrorIs(t, call(), context.Canceled)
		})
	}
	after, err := db.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, before.Documents, after.Documents)
	require.Equal(t, before.PendingWrites, after.PendingWrites, "nothing written")
	_, err = db.Get(ctx, 1)
	require.NoError(t, err, "not deleted")
}
