package memtable

import (
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simhashdb/simhashdb/permutation"
	"github.com/stretchr/testify/require"
)

// TestMemtableAgainstModel writes random inserts, replacements and
// deletes on few ids and fingerprints, and checks every accessor against a
// map of the latest writes, and Search against a scan of it.
func TestMemtableAgainstModel(t *testing.T) {
	d, err := permutation.ForIndex(3, 1<<12)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(3, 3))
	base := []uint64{0, ^uint64(0), r.Uint64(), r.Uint64(), r.Uint64()}
	m := New(d)
	require.True(t, m.Empty())
	model := map[uint64]Doc{}
	for step := range 3000 {
		id := uint64(r.IntN(60))
		if r.IntN(4) == 0 {
			m.Delete(id)
			model[id] = Doc{}
		} else {
			fp := base[r.IntN(len(base))] ^ uint64(1)<<r.IntN(64)*uint64(r.IntN(2))
			name := []string{"", "a", "bb"}[r.IntN(3)]
			m.Insert(id, fp, name)
			model[id] = Doc{FP: fp, Name: name, Live: true}
		}
		require.Equal(t, len(model), m.Len())
		require.Equal(t, uint64(step+1), m.Writes())
		if step%100 != 0 {
			continue
		}
		byFP := map[uint64][]uint64{}
		for id := range uint64(70) {
			want, written := model[id]
			got, ok := m.Get(id)
			require.Equal(t, written, ok, "id %d", id)
			require.Equal(t, written, m.Touched(id), "id %d", id)
			require.Equal(t, want, got, "id %d", id)
			if want.Live {
				byFP[want.FP] = append(byFP[want.FP], id)
			}
		}
		for fp, ids := range m.Fingerprints() {
			got := slices.Sorted(slices.Values(ids))
			require.Equal(t, byFP[fp], got, "ids of %016x", fp)
			delete(byFP, fp)
		}
		require.Empty(t, byFP, "every live fingerprint is indexed")
		for _, q := range append(slices.Clone(base), r.Uint64()) {
			for k := range 4 {
				found := map[uint64]int{}
				m.Search(q, k, func(fp uint64, dist int) {
					require.Equal(t, bits.OnesCount64(fp^q), dist)
					require.LessOrEqual(t, dist, k)
					found[fp] = dist
				})
				for _, doc := range model {
					if doc.Live && bits.OnesCount64(doc.FP^q) <= k {
						require.Contains(t, found, doc.FP, "query %016x k=%d", q, k)
					}
				}
			}
		}
	}
	require.Positive(t, m.Size())
}
