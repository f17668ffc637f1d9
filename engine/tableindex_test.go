package engine

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simhashdb/simhashdb/bench/data"
	"github.com/stretchr/testify/require"
)

func TestSearchHelpers(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for name, keys := range map[string][]uint64{
		"uniform":   data.Sorted(data.Uniform(5000, 1)),
		"clustered": data.Sorted(data.Clustered(5000, 2)),
		"one":       {42},
		// close keys: buckets of two and of three keys
		"close": {1 << 40, 1<<40 + 1, 1<<40 + 2, 1<<41 + 7, 1<<41 + 9, 3 << 60, 3<<60 + 1<<20},
		"empty": nil,
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
