package sketch

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
)

// sets returns two sets of n hashes sharing about j of their union.
func sets(r *rand.Rand, n int, j float64) (a, b []uint64) {
	shared := int(math.Round(2 * float64(n) * j / (1 + j)))
	for range shared {
		h := r.Uint64()
		a, b = append(a, h), append(b, h)
	}
	for range n - shared {
		a, b = append(a, r.Uint64()), append(b, r.Uint64())
	}
	return a, b
}

// TestSimilarity: the estimate lies near the true Jaccard, within the
// spread b-bit MinHash has, over many pairs at each similarity.
func TestSimilarity(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, j := range []float64{0, 0.2, 0.5, 0.8, 0.9, 1} {
		var sum, sq float64
		const pairs = 200
		for range pairs {
			a, b := sets(r, 400, j)
			e := Similarity(Of(a), Of(b))
			sum += e
			sq += (e - j) * (e - j)
		}
		mean, rmse := sum/pairs, math.Sqrt(sq/pairs)
		assert.InDelta(t, j, mean, 0.02, "J = %.1f: mean estimate", j)
		assert.Less(t, rmse, 0.08, "J = %.1f: error", j)
	}
}

// TestSketchBasics: a set matches itself whole, duplicates change nothing,
// the order of adds does not matter, and slots pack as documented.
func TestSketchBasics(t *testing.T) {
	a := []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	s := Of(a)
	assert.Equal(t, Slots, Matches(s, s))
	assert.Equal(t, 1.0, Similarity(s, s))
	assert.Equal(t, s, Of(append(a, a...)))
	assert.Equal(t, s, Of([]uint64{10, 9, 8, 7, 6, 5, 4, 3, 2, 1}))
	b := New()
	for _, h := range a {
		b.Add(h)
	}
	for i := range Slots {
		assert.Equal(t, byte(b.min[i]&3), s[i/4]>>(2*(i%4))&3, "slot %d", i)
	}
	var flipped Sketch = s
	flipped[0] ^= 0b11 // slot 0 disagrees
	assert.Equal(t, Slots-1, Matches(s, flipped))
}

// BenchmarkAdd is the cost of one shingle.
func BenchmarkAdd(b *testing.B) {
	s := New()
	for i := range b.N {
		s.Add(uint64(i) * 0x9e3779b97f4a7c15)
	}
}
