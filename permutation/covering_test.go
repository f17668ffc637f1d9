package permutation

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCovering(t *testing.T) {
	tests := []struct {
		k, r, t    int
		tables     int // Turán's number where known: the search must find it
		minPrefix  int
		blocksLike int // tables of Blocks at the same distance and about the same prefix
	}{
		// t = 2: the complement of Turán's graph (blocks in r-k-1 groups,
		// every pair within a group) is optimal.
		{3, 6, 2, 6, 21, 10},
		{4, 8, 2, 7, 16, 0},
		{5, 8, 2, 12, 16, 28},
		{4, 10, 3, 0, 18, 0},
		{2, 5, 1, 3, 12, 0},
	}
	for _, tc := range tests {
		d, err := Covering(tc.k, tc.r, tc.t)
		require.NoError(t, err, "%+v", tc)
		require.NoError(t, d.Validate(), "%+v", tc)
		assert.Equal(t, tc.k, d.K)
		if tc.tables > 0 {
			assert.Equal(t, tc.tables, len(d.Tables), "%+v", tc)
		}
		assert.Equal(t, tc.minPrefix, d.MinPrefix(), "%+v", tc)
		// Every table's prefix is t whole blocks, no two tables alike.
		seen := map[string]bool{}
		for _, tb := range d.Tables {
			s := tb.String()
			assert.False(t, seen[s], "table %s twice", s)
			seen[s] = true
		}
		// The same arguments give the same design.
		again, err := Covering(tc.k, tc.r, tc.t)
		require.NoError(t, err)
		a, _ := d.MarshalBinary()
		b, _ := again.MarshalBinary()
		assert.Equal(t, a, b)
		// Beyond k, most differences still leave some prefix clean.
		assert.Greater(t, d.Finds(tc.k+1), 0.75, "%+v", tc)
	}
	// Fewer tables than Blocks for the same distance and prefix width.
	c, err := Covering(5, 8, 2)
	require.NoError(t, err)
	b, err := Blocks(6, 8)
	require.NoError(t, err)
	assert.Equal(t, b.MinPrefix(), c.MinPrefix())
	assert.Less(t, len(c.Tables), len(b.Tables)/2)

	// t = r-k is Blocks: every choice of blocks.
	all, err := Covering(3, 6, 3)
	require.NoError(t, err)
	blocks, err := Blocks(3, 6)
	require.NoError(t, err)
	assert.Len(t, all.Tables, len(blocks.Tables))

	for _, bad := range [][3]int{{3, 6, 4}, {3, 6, 0}, {-1, 6, 2}, {3, 17, 2}} {
		_, err := Covering(bad[0], bad[1], bad[2])
		assert.ErrorIs(t, err, ErrInvalid, "%v", bad)
	}
}

// A design exact within less than K finds every difference up to Exact
// and is still asked (and encoded) for K.
func TestExact(t *testing.T) {
	d, err := Covering(5, 8, 2)
	require.NoError(t, err)
	d.K, d.Exact = 6, 5
	require.NoError(t, d.Validate())
	assert.Equal(t, 5, d.ExactWithin())
	// A 6-bit difference escapes the two halves' pairs when it falls in
	// six distinct blocks and the two left clean lie in different halves.
	distinct := 56.0 * 48 * 40 * 32 * 24 / (63 * 62 * 61 * 60 * 59)
	assert.InDelta(t, 1-distinct*16/28, d.Finds(6), 0.005, "Finds estimates what the tables find")
	assert.Equal(t, 1.0, d.Finds(5))
	assert.Equal(t, 1.0, d.Finds(-1))
	assert.Equal(t, 0.0, d.Finds(65), "no such difference, and no endless search for one")
	assert.Equal(t, 0.0, d.Finds(64), "every bit differs: every prefix touched")
	var b0 strings.Builder
	d.Describe(&b0, 20)
	assert.Contains(t, b0.String(), "every neighbour within 5")
	assert.Regexp(t, `9\d\.\d% at 6`, b0.String())

	b, err := d.MarshalBinary()
	require.NoError(t, err)
	var back Design
	require.NoError(t, back.UnmarshalBinary(b))
	assert.Equal(t, 6, back.K)
	assert.Equal(t, 5, back.ExactWithin())
	assert.Equal(t, prefixes(d), prefixes(&back))

	// A design exact within K is written as before (version 1).
	p, _ := Paper(10)
	old, err := p.MarshalBinary()
	require.NoError(t, err)
	assert.Equal(t, byte(version), old[len(magic)])
	p.Exact = p.K
	same, err := p.MarshalBinary()
	require.NoError(t, err)
	assert.Equal(t, old, same)

	// Exact within more than its tables find, or above K, is refused.
	d.Exact = 6
	d.K = 7
	assert.ErrorIs(t, d.Validate(), ErrInvalid)
	d.K, d.Exact = 6, 7
	assert.ErrorIs(t, d.Validate(), ErrInvalid)
}

func TestForCandidates(t *testing.T) {
	tests := []struct {
		k, n        int
		tables      int
		exact       int
		sameAsIndex bool
	}{
		// The text index's: two halves of 8 blocks instead of every pair.
		{6, 1 << 20, 12, 5, false},
		{6, 1 << 24, 12, 5, false},
		// Too few fingerprints for 16-bit prefixes: ForIndex's 7 tables.
		{6, 1 << 10, 7, 6, true},
		// Below 6, the halves find too few at k: ForIndex's.
		{3, 1 << 20, 10, 3, true},
		{0, 1 << 20, 1, 0, true},
	}
	for _, tc := range tests {
		d, err := ForCandidates(tc.k, tc.n)
		require.NoError(t, err, "%+v", tc)
		require.NoError(t, d.Validate())
		assert.Equal(t, tc.k, d.K)
		assert.Equal(t, tc.tables, len(d.Tables), "%+v", tc)
		assert.Equal(t, tc.exact, d.ExactWithin(), "%+v", tc)
		ix, err := ForIndex(tc.k, tc.n)
		require.NoError(t, err)
		assert.LessOrEqual(t, len(d.Tables), len(ix.Tables))
		assert.GreaterOrEqual(t, d.MinPrefix(), ix.MinPrefix())
		if !tc.sameAsIndex {
			assert.GreaterOrEqual(t, d.Finds(tc.k), MinCandidateFinds, "%+v: most at k", tc)
		}
		// It survives the trip through an index's metadata.
		b, err := d.MarshalBinary()
		require.NoError(t, err)
		var back Design
		require.NoError(t, back.UnmarshalBinary(b))
		assert.Equal(t, d.ExactWithin(), back.ExactWithin())
	}
	_, err := ForCandidates(-1, 1<<20)
	assert.ErrorIs(t, err, ErrInvalid)
}
