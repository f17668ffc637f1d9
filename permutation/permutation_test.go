package permutation

import (
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func prefixes(d *Design) []int {
	var p []int
	for _, t := range d.Tables {
		p = append(p, t.Prefix)
	}
	return p
}

func TestPaperExample31(t *testing.T) {
	tests := []struct {
		tables     int
		pMin, pMax int
	}{
		{20, 31, 33},
		{16, 28, 28},
		{10, 25, 26},
		{4, 16, 16},
	}
	for _, tc := range tests {
		d, err := Paper(tc.tables)
		require.NoError(t, err)
		assert.Len(t, d.Tables, tc.tables)
		assert.Equal(t, tc.pMin, slices.Min(prefixes(d)), "paper %d", tc.tables)
		assert.Equal(t, tc.pMax, slices.Max(prefixes(d)), "paper %d", tc.tables)
		require.NoError(t, d.Validate(), "paper %d", tc.tables)

		// The optimiser finds the same number of tables for the same p_min.
		o, err := Optimize(3, tc.pMin)
		require.NoError(t, err)
		assert.Len(t, o.Tables, tc.tables, "Optimize(3, %d)", tc.pMin)
		assert.GreaterOrEqual(t, o.MinPrefix(), tc.pMin)
		require.NoError(t, o.Validate())
	}
	_, err := Paper(7)
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestDesignsCoverEveryErrorPattern(t *testing.T) {
	var designs []*Design
	for k := 0; k <= 5; k++ {
		for r := k + 1; r <= k+4; r++ {
			d, err := Blocks(k, r)
			require.NoError(t, err)
			designs = append(designs, d)
		}
		for _, p := range []int{8, 16, 24, 30} {
			if d, err := Optimize(k, p); err == nil {
				designs = append(designs, d)
			}
		}
	}
	for _, r := range [][2]int{{4, 4}, {5, 4}, {4, 5}} {
		d, err := TwoLevel(3, r[0], r[1])
		require.NoError(t, err)
		designs = append(designs, d)
	}
	for _, d := range designs {
		// Validate is the proof: exhaustive over every pattern of weight <= K
		// for K <= 4, sampled above.
		require.NoError(t, d.Validate(), "k=%d tables=%d", d.K, len(d.Tables))
		// And at the level of blocks: every choice of K segments' worth of
		// damage leaves a table whose prefix is clean.
		for _, tb := range d.Tables {
			var seen uint64
			for _, s := range tb.Segments {
				seen |= maskOf(s)
			}
			assert.Equal(t, ^uint64(0), seen, "every table is a permutation of 64 bits")
		}
	}
}

func TestValidateRejectsIncompleteDesigns(t *testing.T) {
	d, err := Blocks(3, 6)
	require.NoError(t, err)
	short, err := New(3, d.Tables[1:])
	assert.Nil(t, short)
	require.ErrorIs(t, err, ErrInvalid)
	assert.Contains(t, err.Error(), "missed")
	// A design claiming more distance than it covers.
	_, err = New(4, d.Tables)
	assert.ErrorIs(t, err, ErrInvalid)
	// Segments that overlap, miss bits or leave 64 bits.
	bad := [][]Segment{
		{{0, 32}, {0, 32}},
		{{0, 32}},
		{{40, 32}, {0, 32}},
		{{0, 0}, {0, 64}},
	}
	for _, segs := range bad {
		_, err := New(0, []Table{{Segments: segs}})
		assert.ErrorIs(t, err, ErrInvalid, "%v", segs)
	}
	_, err = New(0, []Table{{Segments: []Segment{{0, 64}}, Prefix: 65}})
	assert.ErrorIs(t, err, ErrInvalid)
	for _, args := range [][2]int{{3, 3}, {-1, 2}, {3, 65}} {
		_, err := Blocks(args[0], args[1])
		assert.ErrorIs(t, err, ErrInvalid, "%v", args)
	}
	_, err = Optimize(3, 62)
	assert.ErrorIs(t, err, ErrInvalid)
	_, err = TwoLevel(3, 4, 60)
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestPermuteRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	d, err := Optimize(3, 28)
	require.NoError(t, err)
	p20, _ := Paper(20)
	for _, dd := range []*Design{d, p20} {
		for i := range dd.Tables {
			tb := &dd.Tables[i]
			for _, x := range []uint64{0, ^uint64(0), 1, 1 << 63} {
				assert.Equal(t, x, tb.Unpermute(tb.Permute(x)))
			}
			for range 1000 {
				x, y := r.Uint64(), r.Uint64()
				px := tb.Permute(x)
				assert.Equal(t, x, tb.Unpermute(px))
				assert.Equal(t, bits.OnesCount64(x^y), bits.OnesCount64(px^tb.Permute(y)), "distance is preserved")
			}
		}
	}
	// The first table of 4 blocks choose 1 is the identity.
	p4, _ := Paper(4)
	assert.Equal(t, uint64(0x0123456789abcdef), p4.Tables[0].Permute(0x0123456789abcdef))
	// The second moves bits 47:32 to the top.
	assert.Equal(t, uint64(0x4567_0123_89ab_cdef), p4.Tables[1].Permute(0x0123_4567_89ab_cdef))
	assert.Equal(t, "[47:32 | 63:48 31:0] p=16", p4.Tables[1].String())
}

func TestRange(t *testing.T) {
	tb := newTable([]Segment{{0, 64}}, 16)
	lo, hi := tb.Range(0x1234_5678_9abc_def0)
	assert.Equal(t, uint64(0x1234_0000_0000_0000), lo)
	assert.Equal(t, uint64(0x1234_ffff_ffff_ffff), hi)
	full := newTable([]Segment{{0, 64}}, 64)
	lo, hi = full.Range(7)
	assert.Equal(t, [2]uint64{7, 7}, [2]uint64{lo, hi})
	none := newTable([]Segment{{0, 64}}, 0)
	lo, hi = none.Range(7)
	assert.Equal(t, [2]uint64{0, ^uint64(0)}, [2]uint64{lo, hi})
}

func TestMarshal(t *testing.T) {
	for _, n := range []int{4, 10, 16, 20} {
		d, _ := Paper(n)
		b, err := d.MarshalBinary()
		require.NoError(t, err)
		var back Design
		require.NoError(t, back.UnmarshalBinary(b))
		assert.Equal(t, d.K, back.K)
		assert.Equal(t, prefixes(d), prefixes(&back))
		for i := range d.Tables {
			assert.Equal(t, d.Tables[i].Segments, back.Tables[i].Segments)
			assert.Equal(t, d.Tables[i].Permute(0xfeedface12345678), back.Tables[i].Permute(0xfeedface12345678))
		}
		for i := range b {
			bad := slices.Clone(b)
			bad[i] ^= 0x10
			assert.ErrorIs(t, new(Design).UnmarshalBinary(bad), ErrInvalid, "flipped byte %d", i)
		}
		for i := range len(b) {
			assert.ErrorIs(t, new(Design).UnmarshalBinary(b[:i]), ErrInvalid, "truncated to %d", i)
		}
	}
}

// TestEqual: a design equals its decoded copy and its clone, and differs
// from one with another K, exact distance, prefix or table order, and
// from nil.
func TestEqual(t *testing.T) {
	d, err := Paper(4)
	require.NoError(t, err)
	b, err := d.MarshalBinary()
	require.NoError(t, err)
	var back Design
	require.NoError(t, back.UnmarshalBinary(b))
	assert.True(t, d.Equal(&back), "decoded")
	assert.True(t, d.Equal(d.Clone()), "clone")
	var none *Design
	assert.False(t, d.Equal(nil), "nil")
	assert.False(t, none.Equal(d), "nil receiver")
	assert.True(t, none.Equal(nil), "nil and nil")
	for name, change := range map[string]func(*Design){
		"k":      func(c *Design) { c.K = 4 },
		"exact":  func(c *Design) { c.Exact = 2 },
		"prefix": func(c *Design) { c.Tables[0].Prefix-- },
		"order":  func(c *Design) { c.Tables[0], c.Tables[1] = c.Tables[1], c.Tables[0] },
		"tables": func(c *Design) { c.Tables = c.Tables[:3] },
	} {
		c := d.Clone()
		change(c)
		assert.False(t, d.Equal(c), name)
		assert.False(t, c.Equal(d), name)
	}
}

func TestOptimizeMaxTables(t *testing.T) {
	for _, tc := range []struct{ max, want int }{{4, 16}, {10, 26}, {16, 28}, {20, 33}} {
		d, err := OptimizeMaxTables(3, tc.max)
		require.NoError(t, err)
		assert.LessOrEqual(t, len(d.Tables), tc.max)
		assert.GreaterOrEqual(t, d.MinPrefix(), tc.want-2, "max %d tables", tc.max)
	}
	_, err := OptimizeMaxTables(3, 0)
	assert.ErrorIs(t, err, ErrInvalid)
}

func TestDescribe(t *testing.T) {
	d, _ := Paper(10)
	var b strings.Builder
	d.Describe(&b, 34)
	assert.Contains(t, b.String(), "design: 10 tables, k = 3, corpus 2^34")
	assert.Contains(t, b.String(), "p=25  candidates/probe 512")
	assert.InDelta(t, 4*512+6*256, d.CandidatesPerQuery(34), 1e-6)
}

func BenchmarkPermute(b *testing.B) {
	d, _ := Optimize(3, 28)
	tb := &d.Tables[len(d.Tables)-1]
	b.Logf("%d segments", len(tb.Segments))
	x := uint64(0x0123456789abcdef)
	var s uint64
	b.Run("permute", func(b *testing.B) {
		for b.Loop() {
			s += tb.Permute(x)
			x++
		}
	})
	b.Run("unpermute", func(b *testing.B) {
		for b.Loop() {
			s += tb.Unpermute(x)
			x++
		}
	})
	_ = s
}

func TestForIndex(t *testing.T) {
	tests := []struct {
		k      int
		n      int64
		tables int
	}{
		{3, 1 << 20, 10},
		{3, 10_000_000, 10},
		{3, 50_000_000, 10},
		{3, 100_000_000, 10},
		{3, 1 << 30, 16},
		{3, 1 << 34, 20},
		{0, 1 << 20, 1},
		{1, 1_000, 2},
		{3, 0, 4},
	}
	for _, tc := range tests {
		if tc.n > math.MaxInt {
			continue // a 32-bit build
		}
		d, err := ForIndex(tc.k, int(tc.n))
		require.NoError(t, err, "k=%d n=%d", tc.k, tc.n)
		require.NoError(t, d.Validate())
		assert.Len(t, d.Tables, tc.tables, "k=%d n=%d", tc.k, tc.n)
		if tc.n > 1<<10 && len(d.Tables) < maxIndexTables {
			// A probe expects at most 2^candidateBits candidates a table.
			logN := math.Log2(float64(tc.n))
			assert.LessOrEqual(t, d.CandidatesPerQuery(logN)/float64(len(d.Tables)), float64(int(1)<<candidateBits),
				"k=%d n=%d", tc.k, tc.n)
		}
	}
	// Large k: the prefix shrinks until the design fits in 64 tables.
	d, err := ForIndex(8, 1<<30)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(d.Tables), maxIndexTables)
}

// TestForDisk: the disk design trades candidates for tables while a
// probe's range fits a page or two, and never reads more pages than the
// memory design (ForIndex) of the same corpus: just past the crossover it is
// that design.
func TestForDisk(t *testing.T) {
	for _, tc := range []struct {
		k      int
		n      int64
		tables int
		same   bool // ForIndex's design
	}{
		{3, 1 << 20, 4, false},
		{3, 30_000_000, 4, false},
		{3, 80_000_000, 4, false}, // the crossover lies between these two
		{3, 85_000_000, 10, true},
		{3, 100_000_000, 10, true},
		{3, 1 << 32, 10, false},
		{2, 1 << 24, 3, true},
		{0, 1 << 20, 1, true},
	} {
		if tc.n > math.MaxInt {
			continue // a 32-bit build
		}
		d, err := ForDisk(tc.k, int(tc.n))
		require.NoError(t, err, "k=%d n=%d", tc.k, tc.n)
		require.NoError(t, d.Validate())
		assert.Len(t, d.Tables, tc.tables, "k=%d n=%d", tc.k, tc.n)
		m, err := ForIndex(tc.k, int(tc.n))
		require.NoError(t, err)
		logN := math.Log2(float64(tc.n))
		assert.LessOrEqual(t, d.PagesPerQuery(logN), m.PagesPerQuery(logN), "k=%d n=%d", tc.k, tc.n)
		assert.Equal(t, tc.same, d.Equal(m), "k=%d n=%d: ForIndex's design", tc.k, tc.n)
	}
	// Beyond MaxDiskK: an error at once, not minutes of search.
	_, err := ForDisk(MaxDiskK+2, 1<<20)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "up to 4, not 6")
}

// TestPagesPerQuery: a page a table while the ranges are short, more as
// they grow.
func TestPagesPerQuery(t *testing.T) {
	d, err := Paper(4) // p = 16
	require.NoError(t, err)
	assert.InDelta(t, 4.0, d.PagesPerQuery(10), 0.01, "a few candidates a table")
	// 2^24 fingerprints: 256 a range, 41.4 bits each: 1.33 KB, a third of a page.
	assert.InDelta(t, 4*(1+256*(64-24+math.Log2E)/8/DiskPage), d.PagesPerQuery(24), 1e-9)
	assert.Greater(t, d.PagesPerQuery(30), 60.0, "2^14 candidates a table")
}

// TestClone: a clone permutes as the design does and shares nothing with
// it.
func TestClone(t *testing.T) {
	d, err := Paper(10)
	require.NoError(t, err)
	c := d.Clone()
	require.Equal(t, d, c)
	for i := range c.Tables {
		c.Tables[i].Segments[0].Width++
		c.Tables[i].masks[0] = 0
	}
	c.K = 9
	require.NoError(t, d.Validate(), "the original is untouched")
	require.Equal(t, 3, d.K)
	require.NotEqual(t, d.Tables[0].Segments[0], c.Tables[0].Segments[0])
}
