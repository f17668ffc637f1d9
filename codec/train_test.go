package codec

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simhashdb/simhashdb/huffman"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRetrain: a table without a code gets one; a code trained on the same
// distribution stays; a code trained on a sparser table is replaced once
// the table has grown denser, unless too few fingerprints speak for it.
func TestRetrain(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	sorted := func(n int) []uint64 {
		fps := make([]uint64, n)
		for i := range fps {
			fps[i] = r.Uint64()
		}
		slices.Sort(fps)
		return slices.Compact(fps)
	}
	hist := func(fps []uint64) *[huffman.Symbols]uint64 {
		h, err := Histogram(fps)
		require.NoError(t, err)
		return h
	}
	sparse, dense := hist(sorted(1<<10)), hist(sorted(1<<16))

	code, trained := Retrain(nil, dense)
	require.True(t, trained, "a table without a code")
	require.NotNil(t, code)

	same, trained := Retrain(code, hist(sorted(1<<16)))
	assert.False(t, trained, "the same distribution keeps its code")
	assert.Same(t, code, same)

	old := huffman.Build(sparse)
	next, trained := Retrain(old, dense)
	assert.True(t, trained, "a denser table gets a new code")
	assert.Less(t, next.Cost(dense), old.Cost(dense))

	var few [huffman.Symbols]uint64
	few[40] = 50 // a distribution the old code fits badly, but only 50 entries
	require.Greater(t, old.Cost(&few), huffman.Build(&few).Cost(&few)*102/100)
	_, trained = Retrain(old, &few)
	assert.False(t, trained, "too few fingerprints to retrain on")
}
