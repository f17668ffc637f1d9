package bench

import (
	"math/bits"
	"slices"
	"testing"

	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestBucketIndex: the baseline finds exactly what a scan finds, each
// fingerprint once, on planted neighbours at every distance and the
// fingerprints 0 and all-ones.
func TestBucketIndex(t *testing.T) {
	stored := fingerprints.Sorted(fingerprints.Planted(20000, 4, 0.2, 7))
	qs := append(fingerprints.Queries(stored, 2000, 7), 0, ^uint64(0))
	for _, k := range []int{2, 3, 4} {
		b, err := newBucketIndex(k, stored)
		require.NoError(t, err)
		var got []uint64
		for _, q := range qs {
			got = b.query(q, k, got)
			want := []uint64{}
			for _, v := range stored {
				if bits.OnesCount64(v^q) <= k {
					want = append(want, v)
				}
			}
			slices.Sort(got)
			require.Equal(t, want, append([]uint64{}, got...), "k=%d q=%#x", k, q)
		}
		assert.Equal(t, int64(len(stored)*8*(k+1)), b.bytes()-int64(b.bucketsBytes()), "k=%d", k)
	}
	_, err := newBucketIndex(1, stored)
	assert.ErrorContains(t, err, "more than 22 bits")
}

func (b *bucketIndex) bucketsBytes() int {
	n := 0
	for _, s := range b.start {
		n += 4 * len(s)
	}
	return n
}
