package compression

import (
	"math"
	"testing"

	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/stretchr/testify/require"
)

// efEncode builds the Elias-Fano bit vector of sorted fps with l low bits
// (low parts first, then the unary high parts) and decodes it back: the
// test of EliasFanoBits' count.
func efEncode(t *testing.T, fps []uint64, l int) int64 {
	n := len(fps)
	last := fps[n-1]
	highLen := uint64(n) + last>>l + 1
	size := int64(n)*int64(l) + int64(highLen)
	bitsOf := make([]uint64, (size+63)/64)
	set := func(i int64) { bitsOf[i/64] |= 1 << (i % 64) }
	get := func(i int64) bool { return bitsOf[i/64]>>(i%64)&1 == 1 }
	for i, v := range fps {
		for b := range l {
			if v>>b&1 == 1 {
				set(int64(i)*int64(l) + int64(b))
			}
		}
		set(int64(n)*int64(l) + int64(v>>l) + int64(i))
	}
	// Decode.
	pos := int64(n) * int64(l)
	var high uint64
	for i := range n {
		for !get(pos) {
			pos++
			high++
		}
		pos++
		var low uint64
		for b := range l {
			if get(int64(i)*int64(l) + int64(b)) {
				low |= 1 << b
			}
		}
		require.Equal(t, fps[i], high<<l|low, "value %d decodes", i)
	}
	return size
}

func TestEliasFanoBits(t *testing.T) {
	for _, tc := range []struct {
		name string
		fps  []uint64
	}{
		{"one", []uint64{42}},
		{"zero and all-ones", []uint64{0, ^uint64(0)}},
		{"uniform", fingerprints.Sorted(fingerprints.Uniform(5000, 1))},
		{"clustered", fingerprints.Sorted(fingerprints.Clustered(5000, 2))},
	} {
		n := len(tc.fps)
		l := lowBits(^uint64(0), n)
		require.Equal(t, efEncode(t, tc.fps, l), EliasFanoBits(tc.fps), tc.name)
	}
	require.Zero(t, EliasFanoBits(nil))
}

func TestLowBits(t *testing.T) {
	for _, tc := range []struct {
		top  uint64
		n, l int
	}{
		{^uint64(0), 1, 63}, {^uint64(0), 2, 63}, {^uint64(0), 3, 62}, {^uint64(0), 1 << 20, 44},
		{^uint64(0), 1<<20 + 1, 43}, {999, 10, 6}, {1023, 1024, 0}, {5, 10, 0}, {1 << 40, 1, 40},
	} {
		require.Equal(t, tc.l, lowBits(tc.top, tc.n), "top %d n %d", tc.top, tc.n)
		want := int(math.Floor(math.Log2((float64(tc.top) + 1) / float64(tc.n))))
		require.Equal(t, min(max(want, 0), 63), tc.l, "the table agrees with the definition")
	}
}

// TestPartitionedEliasFano: a run of consecutive values is one partition
// that fills its range and costs only its upper entries; a gap costs bits;
// on clustered values the cuts follow the clusters, far below one
// Elias-Fano, and on uniform ones they cost about what it does.
func TestPartitionedEliasFano(t *testing.T) {
	run := make([]uint64, 1024)
	for i := range run {
		run[i] = uint64(i)
	}
	upper := PartitionedEliasFanoBits(run)
	require.Equal(t, EliasFanoBits([]uint64{1023})+efBits(1, 0, 0), upper, "one full partition: its last value and offset (0) only")
	gap := append([]uint64(nil), run...)
	for i := 1000; i < len(gap); i++ {
		gap[i] += 23
	}
	require.Greater(t, PartitionedEliasFanoBits(gap), upper)

	clu := fingerprints.Sorted(fingerprints.Clustered(1<<16, 4))
	require.Less(t, float64(PartitionedEliasFanoBits(clu)), 0.6*float64(EliasFanoBits(clu)), "clustered")
	uni := fingerprints.Sorted(fingerprints.Uniform(1<<16, 3))
	ef, pef := EliasFanoBits(uni), PartitionedEliasFanoBits(uni)
	require.InDelta(t, 1, float64(pef)/float64(ef), 0.03, "uniform: PEF %d vs EF %d", pef, ef)
	require.Zero(t, PartitionedEliasFanoBits(nil))
	require.Positive(t, PartitionedEliasFanoBits([]uint64{^uint64(0)}))
}

// TestMeasure: every method is in the report, the codec at each block
// size, and on a uniform set each lies where its design puts it against
// the bound.
func TestMeasure(t *testing.T) {
	fps := fingerprints.Sorted(fingerprints.Uniform(1<<16, 5))
	rep, err := Measure(fps, []int{256, 1024})
	require.NoError(t, err)
	require.Equal(t, len(fps), rep.N)
	require.InDelta(t, 64-16+1.44, rep.Bound, 0.05, "log2 C(2^64, n)/n is about 64 - log2 n + log2 e")
	byName := map[string]Row{}
	for _, r := range rep.Rows {
		byName[r.Method] = r
		require.Positive(t, r.Bytes, r.Method)
		require.InDelta(t, float64(r.Bytes*8)/float64(len(fps)), r.BitsPerFP, 1e-9, r.Method)
	}
	require.Len(t, rep.Rows, 2+6)
	c1k := byName["codec, 1024-byte blocks"]
	require.Greater(t, c1k.OverBound, 0.5)
	require.Less(t, c1k.OverBound, 3.0)
	require.Less(t, c1k.BitsPerFP, byName["codec, 256-byte blocks"].BitsPerFP, "larger blocks carry less frame a fingerprint")
	require.Less(t, byName["Elias-Fano"].OverBound, 2.0)
	require.Greater(t, byName["roaring64"].BitsPerFP, 64.0, "sparse 64-bit sets cost roaring more than 8 bytes")
	require.Less(t, byName["Pebble keys, Zstd"].BitsPerFP, 90.0)

	_, err = Measure([]uint64{3, 1}, nil)
	require.ErrorContains(t, err, "sorted and distinct")
	_, err = Measure([]uint64{1, 1}, nil)
	require.ErrorContains(t, err, "sorted and distinct")
	empty, err := Measure(nil, []int{1024})
	require.NoError(t, err)
	require.Zero(t, empty.N)
}

// TestClusteredBelowBound: fingerprints that cluster go below the uniform
// bound in the codec, which the report says rather than hides.
func TestClusteredBelowBound(t *testing.T) {
	fps := fingerprints.Sorted(fingerprints.Clustered(1<<16, 6))
	rep, err := Measure(fps, []int{1024})
	require.NoError(t, err)
	require.Negative(t, rep.Rows[0].OverBound)
	n, err := PebbleKeysBytes(fps, sstable.NoCompression)
	require.NoError(t, err)
	require.Greater(t, n, 2*rep.Rows[0].Bytes, "plain keys, without compression")
}
