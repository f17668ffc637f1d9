package engine

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLoad: a load sorted in memory and one sorted in runs on disk (a
// memory of 40 KB: about 60 runs) store the same documents, answer as the
// oracle does and leave no scratch.
func TestLoad(t *testing.T) {
	t.Parallel()
	// With names the loader fetches them by index; without, postings come
	// from the sorted (fingerprint, id) pairs alone.
	for _, tc := range []struct {
		named  bool
		memory int64
	}{{true, 0}, {false, 0}, {true, 40 << 10}, {false, 40 << 10}} {
		t.Run(fmt.Sprintf("named=%v,memory=%d", tc.named, tc.memory), func(t *testing.T) {
			t.Parallel()
			named := tc.named
			r := rand.New(rand.NewPCG(3, 3))
			dir := t.TempDir()
			o := testOptions()
			// Many small files: the documents and the postings are written
			// by many tasks at once.
			o.knobs.docsPerSST, o.knobs.postingsPerSST = 500, 97
			o.knobs.loadMemory = tc.memory
			db := openT(t, dir, o)
			docs := corpus(6000, 2)
			if !named {
				for i := range docs {
					docs[i].Name = ""
				}
			}
			// Out of id order, so that every part holds ids of all ranges.
			r.Shuffle(len(docs), func(i, j int) { docs[i], docs[j] = docs[j], docs[i] })
			// A repeated id keeps its last document: within a part, and
			// across parts (a later part replaces an earlier one's, which
			// leaves neither its record nor its posting), twice for some.
			docs = append(docs, Doc{ID: docs[5].ID, Fingerprint: 12345})
			for i := range 300 {
				d := docs[i*7]
				d.Fingerprint ^= 1 << (i % 64)
				docs = append(docs, d)
				if i%3 == 0 {
					d.Fingerprint = docs[i].Fingerprint // another's
					docs = append(docs, d)
				}
			}
			if named {
				docs[len(docs)-1].Name = "replaced"
			}
			require.NoError(t, db.Load(ctx, DocsOf(docs)))
			ssts, err := filepath.Glob(filepath.Join(dir, "pebble", "*.sst"))
			require.NoError(t, err)
			require.Greater(t, len(ssts), 6000/500+6000/97)
			scratch, err := filepath.Glob(filepath.Join(dir, "pebble", "*", "*"))
			require.NoError(t, err)
			require.Empty(t, scratch, "the load's scratch")
			model := oracleOf(docs)
			qs := queries(model, 3, 200, r)
			checkQueries(t, db, model, qs, "loaded")
			rep, err := db.Check(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(len(model)), rep.Documents)
			for _, d := range model {
				got, err := db.Get(ctx, d.ID)
				require.NoError(t, err, "id %d", d.ID)
				require.Equal(t, d, got, "id %d", d.ID)
			}
			// A second Load into a non-empty index takes the insert path.
			more := corpus(600, 9)
			for i := range more {
				more[i].ID += 1 << 40
				model[more[i].ID] = more[i]
			}
			require.NoError(t, db.Load(ctx, DocsOf(more)))
			checkQueries(t, db, model, qs, "loaded twice")
			require.NoError(t, db.Close())
			db = openT(t, dir, Options{})
			defer db.Close()
			checkQueries(t, db, model, qs, "reopened")
			_, err = db.Check(ctx)
			require.NoError(t, err)
		})
	}
}

// TestLoadSourceError: an error from the documents' sequence, at any
// point of a load in memory or on disk, stops it with that error and
// nothing stored, and the index takes a load afterwards.
func TestLoadSourceError(t *testing.T) {
	t.Parallel()
	bad := errors.New("line 7: not a fingerprint")
	for _, memory := range []int64{0, 20 << 10} {
		for _, at := range []int{0, 1, 1500, 2999} {
			t.Run(fmt.Sprintf("memory=%d,at=%d", memory, at), func(t *testing.T) {
				t.Parallel()
				o := testOptions()
				o.knobs.loadMemory = memory
				dir := t.TempDir()
				db := openT(t, dir, o)
				defer db.Close()
				docs := corpus(3000, 4)
				failing := func(yield func(Doc, error) bool) {
					for i, d := range docs {
						if i == at {
							yield(Doc{}, bad)
							return
						}
						if !yield(d, nil) {
							return
						}
					}
				}
				require.ErrorIs(t, db.Load(ctx, failing), bad)
				st, err := db.Stats(ctx)
				require.NoError(t, err)
				require.Zero(t, st.Documents)
				scratch, err := filepath.Glob(filepath.Join(dir, "pebble", "*", "*"))
				require.NoError(t, err)
				require.Empty(t, scratch, "the load's scratch")
				require.NoError(t, db.Load(ctx, DocsOf(docs)))
				model := oracleOf(docs)
				checkQueries(t, db, model, queries(model, 3, 50, rand.New(rand.NewPCG(5, 5))), "loaded after a failed load")
			})
		}
	}
}

// TestLoadBadDocument: a document Load refuses (a name with a NUL) is
// named, in memory or in a part sorted on disk, and nothing is stored.
func TestLoadBadDocument(t *testing.T) {
	t.Parallel()
	for _, memory := range []int64{0, 20 << 10} {
		t.Run(fmt.Sprint(memory), func(t *testing.T) {
			t.Parallel()
			o := testOptions()
			o.knobs.loadMemory = memory
			db := openT(t, t.TempDir(), o)
			defer db.Close()
			docs := corpus(3000, 6)
			docs[2500].Name = "a\x00b"
			err := db.Load(ctx, DocsOf(docs))
			require.ErrorIs(t, err, ErrInput)
			require.ErrorContains(t, err, fmt.Sprintf("document %d", docs[2500].ID))
			st, err := db.Stats(ctx)
			require.NoError(t, err)
			require.Zero(t, st.Documents)
		})
	}
}

// TestLoadCanceled: a Load whose context is done stores nothing, and the
// index takes a Load afterwards.
func TestLoadCanceled(t *testing.T) {
	t.Parallel()
	db := openT(t, t.TempDir(), testOptions())
	defer db.Close()
	docs := corpus(3000, 4)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, db.Load(cctx, DocsOf(docs)), context.Canceled)
	st, err := db.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, st.Documents)
	require.NoError(t, db.Load(ctx, DocsOf(docs)))
	model := oracleOf(docs)
	checkQueries(t, db, model, queries(model, 3, 100, rand.New(rand.NewPCG(4, 4))), "loaded after a canceled load")
}

// TestLoadNothing: a load of no documents, in memory or with a memory of
// one byte, stores none, and the index takes inserts and a load after it.
func TestLoadNothing(t *testing.T) {
	t.Parallel()
	for _, memory := range []int64{0, 1} {
		o := testOptions()
		o.knobs.loadMemory = memory
		db := openT(t, t.TempDir(), o)
		require.NoError(t, db.Load(ctx, DocsOf(nil)))
		st, err := db.Stats(ctx)
		require.NoError(t, err)
		require.Zero(t, st.Documents)
		docs := corpus(300, 8)
		require.NoError(t, db.Load(ctx, DocsOf(docs)))
		require.NoError(t, db.Insert(ctx, Doc{ID: 1 << 50, Fingerprint: 7}))
		model := oracleOf(append(docs, Doc{ID: 1 << 50, Fingerprint: 7}))
		checkQueries(t, db, model, queries(model, 3, 30, rand.New(rand.NewPCG(8, 8))), fmt.Sprintf("memory %d", memory))
		require.NoError(t, db.Close())
	}
}
