package radix

import (
	"cmp"
	"fmt"
	"slices"
	"testing"

	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSort(t *testing.T) {
	for _, n := range []int{0, 1, 100, 5000, 100000, 3_000_000} {
		x := fingerprints.Uniform(n, uint64(n))
		if n > 10 {
			for i := range n / 10 {
				x[i] &= 0xffff // many keys sharing their high bytes
			}
		}
		want := slices.Clone(x)
		slices.Sort(want)
		Sort(x)
		assert.Equal(t, want, x, "n=%d", n)
	}
	// Clustered keys: crowded buckets, runs of equal keys, 0 and all-ones.
	x := fingerprints.Clustered(300000, 7)
	want := slices.Clone(x)
	slices.Sort(want)
	Sort(x)
	assert.Equal(t, want, x, "clustered")
}

func TestSortPairs(t *testing.T) {
	for _, n := range []int{0, 1, 2, 50000} {
		keys := fingerprints.Clustered(n, 4)
		vals := make([]uint32, len(keys))
		for i := range vals {
			vals[i] = uint32(i)
		}
		type kv struct {
			k uint64
			v uint32
		}
		want := make([]kv, len(keys))
		for i := range keys {
			want[i] = kv{keys[i], vals[i]}
		}
		slices.SortStableFunc(want, func(a, b kv) int { return cmp.Compare(a.k, b.k) })
		SortPairs(keys, vals)
		for i := range want {
			require.Equal(t, want[i], kv{keys[i], vals[i]}, "n=%d at %d", n, i)
		}
	}
}

func BenchmarkSort(b *testing.B) {
	for _, n := range []int{1 << 20, 1 << 24} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			src := fingerprints.Uniform(n, 1)
			x := make([]uint64, len(src))
			b.SetBytes(int64(8 * n))
			for b.Loop() {
				copy(x, src)
				Sort(x)
			}
		})
	}
}

func TestSortTop(t *testing.T) {
	for _, top := range []int{1, 7, 8, 25, 32, 64} {
		x := fingerprints.Clustered(20000, uint64(top))
		want := slices.Clone(x)
		slices.Sort(want)
		SortTop(x, make([]uint64, len(x)), top)
		shift := uint(64 - top)
		for i := 1; i < len(x); i++ {
			require.LessOrEqual(t, x[i-1]>>shift, x[i]>>shift, "top=%d at %d", top, i)
		}
		got := slices.Clone(x)
		slices.Sort(got)
		require.Equal(t, want, got, "top=%d: a permutation of the input", top)
	}
}
