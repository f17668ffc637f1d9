package sketch

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	// Sets smaller than the bins leave most bins empty: densification
	// fills them, and the estimate must hold there too.
	for _, n := range []int{1, 3, 10, 60, 400, 5000} {
		for _, j := range []float64{0, 0.2, 0.5, 0.8, 0.9, 1} {
			var sum, sq float64
			const pairs = 200
			for range pairs {
				a, b := sets(r, n, j)
				// The sets' own Jaccard: rounding moves it off j for small n.
				shared := float64(int(math.Round(2 * float64(n) * j / (1 + j))))
				tj := shared / (2*float64(n) - shared)
				// Unclamped, so that 0 and 1 show no bias of the clamp.
				e := (float64(Matches(Of(a), Of(b)))/Slots - 0.25) / 0.75
				sum += e - tj
				sq += (e - tj) * (e - tj)
			}
			bias, rmse := sum/pairs, math.Sqrt(sq/pairs)
			t.Logf("n = %4d, J = %.1f: bias %+.3f, rmse %.3f", n, j, bias, rmse)
			assert.InDelta(t, 0, bias, 0.03, "n = %d, J = %.1f: mean error", n, j)
			assert.Less(t, rmse, 0.1, "n = %d, J = %.1f: error", n, j)
		}
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
	// With every bin filled, slot i holds bits of bin i's minimum.
	b := New()
	for h := range uint64(5000) {
		b.Add(h)
	}
	require.Equal(t, -1, slices.Index(b.min[:], empty), "a bin stayed empty")
	full := b.Sketch()
	for i := range Slots {
		assert.Equal(t, slotBits(b.min[i], i), full[i/4]>>(2*(i%4))&3, "slot %d", i)
	}
	assert.Equal(t, Sketch{}, New().Sketch(), "the empty set")
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

// BenchmarkSketch is the cost of a sketch's densification, of a set filling
// a quarter of the bins.
func BenchmarkSketch(b *testing.B) {
	s := New()
	for h := range uint64(Slots / 4) {
		s.Add(h)
	}
	for range b.N {
		s.Sketch()
	}
}

// TestText: a text's sketch is that of its 5-token shingles; a shorter
// text is one shingle; order matters; a text shares its shingles' share
// of similarity with an edited copy.
func TestText(t *testing.T) {
	of := func(tokens []uint64) Sketch {
		x := NewText()
		for _, h := range tokens {
			x.Token(h)
		}
		require.Equal(t, len(tokens), x.Tokens())
		return x.Sketch()
	}
	toks := make([]uint64, 2000)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range toks {
		toks[i] = r.Uint64() % 500 // words repeat, as in text
	}
	assert.Equal(t, of(toks), of(toks), "the same tokens, the same sketch")
	assert.Equal(t, Sketch{}, of(nil), "no tokens")
	assert.NotEqual(t, Sketch{}, of(toks[:3]), "a short text is one shingle")
	assert.Less(t, Similarity(of([]uint64{1, 2, 3}), of([]uint64{3, 2, 1})), 0.3, "order matters, in a text of one shingle too")
	// Change one token in 100: about 5% of the shingles change, so the
	// Jaccard of the shingle sets is about 0.9.
	edited := slices.Clone(toks)
	for i := 50; i < len(edited); i += 100 {
		edited[i] = r.Uint64()
	}
	assert.InDelta(t, 0.9, Similarity(of(toks), of(edited)), 0.1)
	// Unrelated texts.
	other := make([]uint64, 2000)
	for i := range other {
		other[i] = r.Uint64()
	}
	assert.Less(t, Similarity(of(toks), of(other)), 0.3)
	// Reset starts over.
	x := NewText()
	x.Token(9)
	x.Reset()
	for _, h := range toks {
		x.Token(h)
	}
	assert.Equal(t, of(toks), x.Sketch())
}
