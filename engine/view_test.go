package engine

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestWritesDuringLongRead: while a long read computes on its pinned view,
// inserts, deletes, a flush and queries finish (with the read lock held,
// as before views, they would wait for it), and the read answers as the
// index was when it began; the next read sees the writes.
func TestWritesDuringLongRead(t *testing.T) {
	t.Parallel()
	docs := corpus(900, 3)
	queries := make([]uint64, pinQueries)
	for i := range queries {
		queries[i] = docs[i%len(docs)].Fingerprint
	}
	reads := []struct {
		name string
		read func(db *DB) (any, error)
	}{
		{"FindAll", func(db *DB) (any, error) { return collect2(db.FindAll(ctx, 3)) }},
		{"Clusters", func(db *DB) (any, error) { return collect2(db.Clusters(ctx, 3)) }},
		{"Stars", func(db *DB) (any, error) { return collect2(db.Stars(ctx, 3)) }},
		{"QueryBatch", func(db *DB) (any, error) { return collect2(db.QueryBatch(ctx, queries, 3)) }},
		{"Docs", func(db *DB) (any, error) { return collect2(db.Docs(ctx)) }},
	}
	for _, rd := range reads {
		t.Run(rd.name, func(t *testing.T) {
			var during func()
			o := testOptions()
			o.knobs.afterPin = func() {
				if f := during; f != nil {
					during = nil
					f()
				}
			}
			db := openT(t, t.TempDir(), o)
			defer db.Close()
			require.NoError(t, db.InsertBatch(ctx, docs[:600]))
			require.NoError(t, db.Flush(ctx))
			require.NoError(t, db.InsertBatch(ctx, docs[600:])) // in the memtable
			before, err := rd.read(db)
			require.NoError(t, err)
			during = func() {
				done := make(chan error, 1)
				go func() {
					// Copies of stored fingerprints under new ids, deletes of
					// flushed and unflushed documents, a flush, more copies.
					var more []Doc
					for i, d := range docs[:100] {
						more = append(more, Doc{ID: 1<<40 + uint64(i), Fingerprint: d.Fingerprint, Name: "copy"})
					}
					err := db.InsertBatch(ctx, more[:80])
					for _, i := range []int{1, 2, 3, 700, 701} {
						if err == nil {
							err = db.Delete(ctx, docs[i].ID)
						}
					}
					if err == nil {
						err = db.Flush(ctx)
					}
					if err == nil {
						err = db.InsertBatch(ctx, more[80:])
					}
					if err == nil {
						_, err = db.Query(ctx, docs[0].Fingerprint, 3)
					}
					done <- err
				}()
				// Writes that waited for the read would never finish (the
				// read waits for them): go test's timeout, with stacks.
				require.NoError(t, <-done)
			}
			got, err := rd.read(db)
			require.NoError(t, err)
			require.Nil(t, during, "the read pinned a view")
			require.Equal(t, before, got, "the read sees the index as it began")
			after, err := rd.read(db)
			require.NoError(t, err)
			require.NotEqual(t, before, after, "the next read sees the writes")
		})
	}
}

// collect2 gathers a sequence of values and errors, stopping at the first
// error.
func collect2[V any](seq func(func(V, error) bool)) ([]V, error) {
	var out []V
	for v, err := range seq {
		if err != nil {
			return out, err
		}
		out = append(out, v)
	}
	return out, nil
}
