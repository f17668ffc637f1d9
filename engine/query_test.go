package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/simhashdb/simhashdb/engine/internal/units"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/stretchr/testify/require"
)

// TestQueryManyCandidates checks queries whose matches are more distinct
// fingerprints than postingsOf looks up at once, with their units cached,
// not cached, or some of each, and units big or not.
func TestQueryManyCandidates(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(11, 12))
	center := r.Uint64()
	var docs []Doc
	seen := map[uint64]bool{}
	for len(seen) < 3*lookupBatch+5 {
		fp := fingerprints.Flip(center, r.IntN(4), r)
		seen[fp] = true
		for range 1 + r.IntN(3) { // some fingerprints with several documents
			docs = append(docs, Doc{ID: uint64(len(docs)) + 1, Fingerprint: fp, Name: fmt.Sprint("near-", len(docs))})
		}
	}
	for i, fp := range fingerprints.Uniform(2000, 9) {
		docs = append(docs, Doc{ID: uint64(len(docs)) + 1, Fingerprint: fp})
		if i%3 == 0 {
			docs[len(docs)-1].Name = fmt.Sprint("far-", i)
		}
	}
	model := oracleOf(docs)
	for _, max := range []int{1, 8, units.DefaultMax} {
		t.Run(fmt.Sprint("unitMax ", max), func(t *testing.T) {
			o := testOptions()
			o.knobs.unitMax = max
			db := openT(t, t.TempDir(), o)
			defer db.Close()
			require.NoError(t, db.Load(ctx, DocsOf(docs)))
			check := func(q uint64, stage string) {
				for k := 0; k <= db.K(); k++ {
					got, err := db.Query(ctx, q, k)
					require.NoError(t, err)
					want := model.query(q, k)
					require.Equal(t, len(want), len(got), "%s: query %016x k=%d", stage, q, k)
					if len(want) > 0 {
						require.Equal(t, want, got, "%s: query %016x k=%d", stage, q, k)
					}
				}
			}
			require.Greater(t, len(model.query(center, 3)), 3*lookupBatch, "the query must have more candidates than a batch")
			check(center, "no unit cached")
			check(center, "units cached")
			db.cache.Clear()
			check(fingerprints.Flip(center, 2, r), "some units cached") // caches the units of its own matches
			check(center, "some units cached")
		})
	}
}
