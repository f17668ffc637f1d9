package join

import (
	"cmp"
	"context"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/stretchr/testify/require"
)

// brute is the oracle: every pair of distinct values within k.
func brute(fps []uint64, k int) []Pair {
	d, _ := Distinct(slices.Clone(fps))
	var out []Pair
	for i, a := range d {
		for _, b := range d[i+1:] {
			if x := bits.OnesCount64(a ^ b); x <= k {
				out = append(out, Pair{a, b, x})
			}
		}
	}
	return sortPairs(out)
}

func sortPairs(p []Pair) []Pair {
	slices.SortFunc(p, func(x, y Pair) int {
		return cmp.Or(cmp.Compare(x.A, y.A), cmp.Compare(x.B, y.B))
	})
	return p
}

// varied is uniform, clustered and planted data with repeats, 0 and
// all-ones.
func varied(n int, seed uint64) []uint64 {
	var fps []uint64
	fps = append(fps, fingerprints.Uniform(n/3, seed)...)
	fps = append(fps, fingerprints.Clustered(n/3, seed)...)
	fps = append(fps, fingerprints.Planted(n/3, 3, 0.3, seed)...)
	for range 5 {
		fps = append(fps, 0, ^uint64(0), 1, 0xdeadbeef)
	}
	return fps
}

func designs(t *testing.T) map[string]*permutation.Design {
	out := map[string]*permutation.Design{}
	var err error
	out["blocks-6"], err = permutation.Blocks(3, 6)
	require.NoError(t, err)
	out["optimised"], err = permutation.Optimize(3, 12)
	require.NoError(t, err)
	out["paper-4"], err = permutation.Paper(4)
	require.NoError(t, err)
	out["two-level"], err = permutation.TwoLevel(3, 4, 4)
	require.NoError(t, err)
	return out
}

func TestPairsAgainstOracle(t *testing.T) {
	fps := varied(3000, 1)
	for name, d := range designs(t) {
		for k := 0; k <= 3; k++ {
			f, err := New(d, k)
			require.NoError(t, err)
			d, _ := Distinct(slices.Clone(fps))
			got, err := f.Pairs(context.Background(), d, 2)
			require.NoError(t, err)
			require.Equal(t, brute(fps, k), sortPairs(got), "%s k=%d", name, k)
		}
	}
}

// TestScanInPieces feeds sorted tables in random pieces, as a stored table's
// blocks arrive, and checks every pair comes out once.
func TestScanInPieces(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 3))
	fps, _ := Distinct(varied(3000, 2))
	d := designs(t)["blocks-6"]
	f, err := New(d, 3)
	require.NoError(t, err)
	var got []Pair
	for ti := range d.Tables {
		perm := make([]uint64, len(fps))
		for i, v := range fps {
			perm[i] = d.Tables[ti].Permute(v)
		}
		slices.Sort(perm)
		s := f.NewScan(ti, func(p Pair) bool { got = append(got, p); return true })
		for len(perm) > 0 {
			n := min(len(perm), r.IntN(40)+1)
			require.True(t, s.Feed(perm[:n]))
			perm = perm[n:]
		}
		require.True(t, s.Close())
	}
	require.Equal(t, brute(fps, 3), sortPairs(got))
}

func TestScanStops(t *testing.T) {
	fps := make([]uint64, 100) // neighbours of 0 at distance 1: many pairs
	for i := range fps {
		fps[i] = 1 << i % 64
	}
	fps, _ = Distinct(fps)
	d := designs(t)["paper-4"]
	f, err := New(d, 3)
	require.NoError(t, err)
	n := 0
	s := f.NewScan(0, func(Pair) bool { n++; return n < 3 })
	perm := make([]uint64, len(fps))
	for i, v := range fps {
		perm[i] = d.Tables[0].Permute(v)
	}
	slices.Sort(perm)
	s.Feed(perm) // the run may be carried to Close
	require.False(t, s.Close())
	require.False(t, s.Feed(perm), "a stopped scan stays stopped")
	require.Equal(t, 3, n)
}

func TestNewRejectsDistance(t *testing.T) {
	d := designs(t)["paper-4"]
	for _, k := range []int{-1, 4, 64} {
		_, err := New(d, k)
		require.ErrorIs(t, err, ErrDistance, "k=%d", k)
	}
}

func TestDistinct(t *testing.T) {
	for _, c := range []struct {
		in, distinct []uint64
		repeated     map[uint64]int
	}{
		{[]uint64{7, 0, 3, 7, 0, 0, 9}, []uint64{0, 3, 7, 9}, map[uint64]int{0: 3, 7: 2}},
		{[]uint64{3, 2, 1}, []uint64{1, 2, 3}, map[uint64]int{}},
		{[]uint64{5, 5}, []uint64{5}, map[uint64]int{5: 2}},
		{nil, nil, map[uint64]int{}},
	} {
		d, r := Distinct(slices.Clone(c.in))
		require.Equal(t, len(c.distinct), len(d), "%v", c.in)
		if len(d) > 0 {
			require.Equal(t, c.distinct, d, "%v", c.in)
		}
		require.Equal(t, c.repeated, r, "%v", c.in)
	}
}

func BenchmarkPairs(b *testing.B) {
	fps, _ := Distinct(fingerprints.Planted(1<<20, 3, 0.01, 1))
	blocks6, err := permutation.Blocks(3, 6)
	require.NoError(b, err)
	chosen, err := DesignFor(3, len(fps))
	require.NoError(b, err)
	for _, c := range []struct {
		name string
		d    *permutation.Design
	}{{"blocks-6", blocks6}, {"designfor", chosen}} {
		b.Run(c.name, func(b *testing.B) {
			f, err := New(c.d, 3)
			require.NoError(b, err)
			for b.Loop() {
				if _, err := f.Pairs(context.Background(), fps, 1); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(len(fps))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mfp/s/core")
		})
	}
}

func TestComponents(t *testing.T) {
	pairs := []Pair{{5, 9, 1}, {1, 5, 2}, {7, 8, 0}, {1, 9, 3}, {4, 4, 0}}
	require.Equal(t, [][]uint64{{1, 5, 9}, {4}, {7, 8}}, Components(pairs))
	require.Empty(t, Components(nil))
}

func TestStars(t *testing.T) {
	// A chain 1-2-3-4-5 at distance 1 each: one component, but stars keep
	// every member next to its leader.
	chain := []Pair{{1, 2, 1}, {2, 3, 1}, {3, 4, 1}, {4, 5, 1}, {7, 7, 0}}
	require.Equal(t, [][]uint64{{1, 2, 3, 4, 5}}, Components(chain[:4]))
	require.Equal(t, [][]uint64{{1, 2}, {3, 4}, {5}, {7}}, Stars(chain, []uint64{1, 2, 3, 4, 5, 7}))
	require.Equal(t, [][]uint64{{3, 2, 4}, {1}, {5}}, Stars(chain, []uint64{3, 2, 4, 1, 5}), "leaders in the order given")
	require.Equal(t, [][]uint64{{3}, {1}}, Stars(chain, []uint64{3, 1}), "values not in order are not members")
	require.Empty(t, Stars(nil, nil))
}
