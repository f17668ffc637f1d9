package engine

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simhashdb/simhashdb/bench/data"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoad(t *testing.T) {
	// With names the loader fetches them by index; without, postings come
	// from the sorted (fingerprint, id) pairs alone.
	for _, named := range []bool{true, false} {
		t.Run(map[bool]string{true: "named", false: "unnamed"}[named], func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 3))
			dir := t.TempDir()
			db := openT(t, dir, testOptions())
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
			model := oracle{}
			for _, d := range docs {
				model[d.ID] = d
			}
			qs := queries(model, 3, 200, r)
			checkQueries(t, db, model, qs, "loaded")
			rep, err := db.Check(ctx)
			require.NoError(t, err)
			assert.Equal(t, int64(len(model)), rep.Documents)
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

func TestSearchHelpers(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for name, keys := range map[string][]uint64{
		"uniform":   data.Sorted(data.Uniform(5000, 1)),
		"clustered": data.Sorted(data.Clustered(5000, 2)),
		"one":       {42},
		"empty":     nil,
	} {
		ti := tableIndex{keys: keys}
		ti.index()
		probes := []uint64{0, ^uint64(0), 41, 42, 43}
		for range 2000 {
			probes = append(probes, r.Uint64())
			if len(keys) > 0 {
				k := keys[r.IntN(len(keys))]
				probes = append(probes, k, k-1, k+1)
			}
		}
		for _, v := range probes {
			want, _ := slices.BinarySearch(keys, v)
			require.Equal(t, want, ti.find(v), "%s: find(%016x)", name, v)
			require.Equal(t, want, lowerBound(keys, v), "%s: lowerBound(%016x)", name, v)
		}
	}
}
