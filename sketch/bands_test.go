package sketch

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func recordOf(set []uint64, l Layout) []byte {
	b := New()
	for _, h := range set {
		b.Add(h)
	}
	return b.AppendRecord(nil, l)
}

// shareBand reports whether two records share a band key.
func shareBand(a, b []byte, l Layout) bool {
	for i := range l.Bands {
		if BandKey(a, i) == BandKey(b, i) {
			return true
		}
	}
	return false
}

// TestBandsFindCandidates: over many pairs at each similarity, the share
// that meets in a band is near the layout's 1 - (1 - J^Rows)^Bands, and
// unrelated sets never meet.
func TestBandsFindCandidates(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, l := range layouts {
		for _, j := range []float64{0, 0.3, l.MinSimilarity, l.MinSimilarity + 0.1, 0.9} {
			const pairs = 400
			met := 0
			for range pairs {
				a, b := sets(r, 300, j)
				if shareBand(recordOf(a, l), recordOf(b, l), l) {
					met++
				}
			}
			want := 1 - math.Pow(1-math.Pow(j, float64(l.Rows)), float64(l.Bands))
			got := float64(met) / pairs
			t.Logf("layout %+v, J = %.2f: %.3f met, %.3f expected", l, j, got, want)
			assert.InDelta(t, want, got, 0.06, "layout %+v, J = %.2f", l, j)
			if j == 0 {
				assert.Zero(t, met, "layout %+v: unrelated sets met", l)
			}
		}
	}
}

// TestRecord: a record is the sketch, then its keys; equal sets give
// equal records, and its size names its layout.
func TestRecord(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	set := make([]uint64, 50)
	for i := range set {
		set[i] = r.Uint64()
	}
	for _, l := range layouts {
		rec := recordOf(set, l)
		require.Len(t, rec, l.RecordSize())
		s := Of(set)
		assert.Equal(t, s[:], rec[:Size])
		shuffled := append([]uint64(nil), set...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		assert.Equal(t, rec, recordOf(shuffled, l))
		got, ok := LayoutOfSize(len(rec))
		require.True(t, ok)
		assert.Equal(t, l, got)
		assert.Equal(t, make([]byte, l.RecordSize()), New().AppendRecord(nil, l), "the empty set's record")
	}
	_, ok := LayoutOfSize(Size)
	assert.False(t, ok, "a bare sketch has no layout")
}

func TestLayoutFor(t *testing.T) {
	for _, c := range []struct {
		s    float64
		want int // bands
	}{{0.5, 24}, {0.55, 24}, {0.6, 22}, {0.7, 20}, {0.79, 20}, {0.8, 16}, {0.95, 16}, {1, 16}} {
		l, err := LayoutFor(c.s)
		require.NoError(t, err)
		assert.Equal(t, c.want, l.Bands, "similarity %g", c.s)
		assert.LessOrEqual(t, l.Bands*l.Rows, Slots)
		p := func(j float64) float64 { return 1 - math.Pow(1-math.Pow(j, float64(l.Rows)), float64(l.Bands)) }
		assert.GreaterOrEqual(t, p(l.MinSimilarity), 0.95, "layout %+v", l)
		assert.GreaterOrEqual(t, p(l.MinSimilarity+0.1), 0.997, "layout %+v", l)
	}
	for _, s := range []float64{0.49, -1, 1.01, math.NaN()} {
		_, err := LayoutFor(s)
		assert.Error(t, err, "similarity %g", s)
	}
}
