package cache

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/stretchr/testify/require"
)

func TestPacked(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	spread := func(n int, span uint64) []uint64 { // n distinct values in [x, x+span]
		x := r.Uint64()
		set := map[uint64]bool{}
		for len(set) < n {
			set[x+r.Uint64N(span+1)] = true
		}
		return slices.Sorted(func(yield func(uint64) bool) {
			for v := range set {
				if !yield(v) {
					return
				}
			}
		})
	}
	sets := map[string][]uint64{
		"empty":          nil,
		"one":            {42},
		"zero":           {0},
		"all-ones":       {^uint64(0)},
		"extremes":       {0, 1, 1 << 63, ^uint64(0) - 1, ^uint64(0)},
		"dense":          {7, 8, 9, 10, 11, 12},
		"uniform block":  fingerprints.Sorted(fingerprints.Uniform(190, 3))[:190],
		"clustered":      fingerprints.Sorted(fingerprints.Clustered(300, 4)),
		"width 49":       spread(190, 1<<49-1),
		"width 57":       spread(100, 1<<57-1),
		"width 58 -> 64": spread(100, 1<<58-1),
		"width 63 -> 64": spread(100, 1<<63-1),
	}
	// View reads the same as Pack, over the decoded fingerprints.
	ways := map[string]func([]uint64) Packed{"pack": Pack, "view": func(fps []uint64) Packed { return View(slices.Clone(fps)) }}
	for name, fps := range sets {
		for way, pack := range ways {
			t.Run(name+"/"+way, func(t *testing.T) { testPacked(t, r, slices.Compact(fps), pack) })
		}
	}
}

func testPacked(t *testing.T, r *rand.Rand, fps []uint64, pack func([]uint64) Packed) {
	p := pack(fps)
	require.Equal(t, len(fps), p.Len())
	require.Equal(t, fps, p.AppendTo(nil))
	if len(fps) > 1 {
		require.Contains(t, []uint8{uint8(bits.Len64(fps[len(fps)-1] - fps[0])), 64}, p.width)
		require.LessOrEqual(t, p.Bytes(), int64(len(fps)*8+8))
	}
	probes := []uint64{0, 1, ^uint64(0), 1 << 63}
	for _, f := range fps {
		probes = append(probes, f, f-1, f+1)
	}
	for range 200 {
		probes = append(probes, r.Uint64())
	}
	for _, v := range probes {
		want, _ := slices.BinarySearch(fps, v)
		require.Equal(t, want, p.LowerBound(v), "lowerBound(%016x)", v)
		// walkFrom finds it from any start, the guess and far off.
		for _, i := range []int{p.Guess(v), 0, p.Len() - 1, r.IntN(max(p.Len(), 1))} {
			if i >= 0 && i < p.Len() {
				require.Equal(t, want, p.WalkFrom(v, i, p.At(i)), "walkFrom(%016x, %d)", v, i)
			}
		}
	}
	found := 0
	// scan: from each lower bound up to a bound some entries on, the
	// entries within k of a query near one of them.
	for x, lo := range probes {
		i := p.LowerBound(lo)
		hi := lo + r.Uint64N(1<<(x%64)+1)
		if hi < lo {
			hi = ^uint64(0)
		}
		q := lo ^ 1<<(x%64) ^ 1<<((x*7)%64)
		k := x % 5
		var want, got []uint64
		for _, f := range fps[i:] {
			if f > hi {
				break
			}
			if bits.OnesCount64(f^q) <= k {
				want = append(want, f)
			}
		}
		p.Scan(i, hi, q, k, func(v uint64, d int) {
			require.Equal(t, bits.OnesCount64(v^q), d)
			got = append(got, v)
		})
		require.Equal(t, want, got, "scan(%d, %016x, %016x, %d)", i, hi, q, k)
		found += len(got)
	}
	if len(fps) > 0 {
		require.Positive(t, found, "no scan found anything: the check above proves little")
	}
}

// A cached block's header and reference bit share one cache line, which
// the allocator gives objects of 64 bytes or less whole.
func TestEntrySize(t *testing.T) {
	require.LessOrEqual(t, unsafe.Sizeof(Entry{}), uintptr(64))
}

func BenchmarkLowerBound(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const blocks = 1 << 14 // 40 MB decoded: out of the CPU's caches, as in an index
	var fps [][]uint64
	var pks []Packed
	for range blocks {
		x := r.Uint64() >> 1
		set := make([]uint64, 190)
		for i := range set {
			set[i] = x + r.Uint64N(1<<49)
		}
		slices.Sort(set)
		set = slices.Compact(set)
		fps, pks = append(fps, set), append(pks, Pack(set))
	}
	probes := make([]uint64, 1<<16)
	idx := make([]int, len(probes))
	for i := range probes {
		idx[i] = r.IntN(blocks)
		f := fps[idx[i]]
		probes[i] = f[0] + r.Uint64N(f[len(f)-1]-f[0])
	}
	b.Run("decoded", func(b *testing.B) {
		s := 0
		for i := 0; b.Loop(); i++ {
			j := i % len(probes)
			s += LowerBound(fps[idx[j]], probes[j])
		}
		_ = s
	})
	b.Run("packed", func(b *testing.B) {
		s := 0
		for i := 0; b.Loop(); i++ {
			j := i % len(probes)
			s += pks[idx[j]].LowerBound(probes[j])
		}
		_ = s
	})
}

// TestPackPairs: a unit's postings, fingerprints (ascending, repeated
// where documents share one) each with an id in any order, read back whole
// and searched, at every width of either field, 64-bit ones included.
func TestPackPairs(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	ids := func(n int, span uint64) []uint64 { // n values in [x, x+span]
		x := r.Uint64N(^uint64(0) - span + 1)
		v := make([]uint64, n)
		for i := range v {
			if span == ^uint64(0) {
				v[i] = r.Uint64()
			} else {
				v[i] = x + r.Uint64N(span+1)
			}
		}
		return v
	}
	sorted := func(n int, span uint64) []uint64 {
		v := ids(n, span)
		slices.Sort(v)
		return v
	}
	widths := map[string][2]uint8{ // width, and the id's
		"47 + 24 bits": {47, 24}, "57 + 57 bits": {57, 57}, "64 + 20 bits": {64, 24},
		"30 + 64 bits": {32, 64}, "64 + 64 bits": {64, 64}, "0 + 64 bits": {0, 64},
	}
	for _, tc := range []struct {
		name     string
		fps, ids []uint64
	}{
		{"empty", nil, nil},
		{"one", []uint64{42}, []uint64{9}},
		{"one fingerprint, many ids", []uint64{5, 5, 5}, []uint64{12, 3, 7}},
		{"same id", []uint64{1, 2, 3}, []uint64{5, 5, 5}},
		{"extremes", []uint64{0, 1, 1 << 63, ^uint64(0)}, []uint64{^uint64(0), 0, 1 << 63, 1}},
		{"ordered ids", sorted(64, 1<<47-1), func() []uint64 {
			v := make([]uint64, 64)
			for i := range v {
				v[i] = 1e12 + uint64(i)*3
			}
			return v
		}()},
		{"47 + 24 bits", sorted(64, 1<<47-1), ids(64, 1<<24-1)},
		{"57 + 57 bits", sorted(64, 1<<57-1), ids(64, 1<<57-1)},
		{"64 + 20 bits", sorted(64, 1<<63-1), ids(64, 1<<20-1)},
		{"30 + 64 bits", sorted(64, 1<<30-1), ids(64, ^uint64(0))},
		{"64 + 64 bits", sorted(64, ^uint64(0)), ids(64, ^uint64(0))},
		{"0 + 64 bits", []uint64{7, 7, 7, 7}, ids(4, ^uint64(0))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := PackPairs(tc.fps, tc.ids)
			require.Equal(t, len(tc.fps), p.Len())
			require.Equal(t, tc.fps, p.AppendTo(nil))
			require.Equal(t, tc.ids, p.AppendIDs(nil))
			if len(tc.fps) == 0 {
				require.Zero(t, p.Bytes())
				return
			}
			require.True(t, p.pairs)
			if w, ok := widths[tc.name]; ok {
				require.Equal(t, w, [2]uint8{p.width, p.stride - p.width})
			}
			// A 64-bit field starts on a byte: every entry does, and the
			// other field is whole bytes.
			if iw := p.stride - p.width; p.width == 64 || iw == 64 {
				require.Zero(t, p.stride%8, "stride %d", p.stride)
				require.Zero(t, p.width%8, "width %d", p.width)
			}
			require.LessOrEqual(t, p.Bytes(), int64(len(tc.fps)*16+16))
			for _, v := range append(slices.Clone(tc.fps), 0, ^uint64(0), tc.fps[0]+1, r.Uint64()) {
				want, _ := slices.BinarySearch(tc.fps, v)
				require.Equal(t, want, p.LowerBound(v), "lowerBound(%016x)", v)
			}
		})
	}
}

func BenchmarkPack(b *testing.B) {
	for _, n := range []int{190, 2048} {
		fps := fingerprints.Sorted(fingerprints.Uniform(n, 3))
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			b.SetBytes(int64(8 * n))
			for b.Loop() {
				Pack(fps)
			}
		})
	}
}
