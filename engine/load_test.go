package engine

import (
	"context"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	// With names the loader fetches them by index; without, postings come
	// from the sorted (fingerprint, id) pairs alone.
	for _, named := range []bool{true, false} {
		t.Run(map[bool]string{true: "named", false: "unnamed"}[named], func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 3))
			dir := t.TempDir()
			o := testOptions()
			// Many small files: the documents and the postings are written
			// by many tasks at once.
			o.knobs.docsPerSST, o.knobs.postingsPerSST = 500, 97
			db := openT(t, dir, o)
			docs := corpus(6000, 2)
			if !named {
				for i := range docs {
					docs[i].Name = ""
				}
			}
			// A repeated id keeps its last document.
			docs = append(docs, Doc{ID: docs[5].ID, Fingerprint: 12345})
			if named {
				docs[len(docs)-1].Name = "replaced"
			}
			require.NoError(t, db.Load(ctx, docs))
			ssts, err := filepath.Glob(filepath.Join(dir, "pebble", "*.sst"))
			require.NoError(t, err)
			require.Greater(t, len(ssts), 6000/500+6000/97)
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
			require.NoError(t, db.Load(ctx, more))
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

// TestLoadCanceled: a Load whose context is done stores nothing, and the
// index takes a Load afterwards.
func TestLoadCanceled(t *testing.T) {
	t.Parallel()
	db := openT(t, t.TempDir(), testOptions())
	defer db.Close()
	docs := corpus(3000, 4)
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	require.ErrorIs(t, db.Load(cctx, docs), context.Canceled)
	st, err := db.Stats(ctx)
	require.NoError(t, err)
	require.Zero(t, st.Documents)
	require.NoError(t, db.Load(ctx, docs))
	model := oracleOf(docs)
	checkQueries(t, db, model, queries(model, 3, 100, rand.New(rand.NewPCG(4, 4))), "loaded after a canceled load")
}
