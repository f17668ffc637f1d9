package codec

import (
	"math/rand/v2"
	"testing"

	"github.com/simhashdb/simhashdb/huffman"
	"github.com/stretchr/testify/require"
)

// quickBoth runs quickLanes and quickLanesGo on the same input and fails if
// they differ in anything: rounds, where they stopped, state or output.
func quickBoth(t testing.TB, src []byte, tbl *[1 << huffman.MaxLen]uint16, split [2]int, first uint64, m int) (done, part int) {
	st := laneState{pos: [3]int{0, split[0], split[1]}, fp: [3]uint64{first, 0, 0}}
	want, got := st, st
	outWant, outGot := make([]uint64, 3*m), make([]uint64, 3*m)
	wd, wp := quickLanesGo(&want, src, tbl, outWant, m)
	gd, gp := quickLanes(&got, src, tbl, outGot, m)
	require.Equal(t, [2]int{wd, wp}, [2]int{gd, gp}, "rounds done, chains done in the last")
	require.Equal(t, want, got, "chain state")
	require.Equal(t, outWant, outGot, "decoded values")
	return gd, gp
}

// blockParts returns what lanes sees of an encoded block: its entries,
// splits and chain length, and its first value, 0 (a version 3 block's
// chains count from its first fingerprint).
func blockParts(t testing.TB, b []byte) (src []byte, split [2]int, first uint64, m int) {
	h, err := ReadHeader(b)
	require.NoError(t, err)
	s1, _ := splits(h.Count)
	return b[h.payload:], h.split, 0, s1 - 1
}

// TestQuickLanesMatchesGo checks the assembly loop (where there is one)
// against the Go loop on sound blocks, which both must decode to the end
// of their rounds, and on damaged ones, where they must stop at the same
// entry in the same state.
func TestQuickLanesMatchesGo(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	sets := map[string][]uint64{
		"uniform":   uniform(20000, 1),
		"clustered": clustered(20000, 2),
		"dense":     dense(5000),
		"sparse":    uniform(40, 3), // gaps of 2^58: entries longer than 64 bits
		"extremes":  {0, 1, 2, 1 << 62, 1 << 63, ^uint64(0) - 1, ^uint64(0)},
	}
	for name, fps := range sets {
		t.Run(name, func(t *testing.T) {
			code, err := Train(fps)
			require.NoError(t, err)
			tbl := code.Table()
			for _, size := range []int{MinBlockSize, DefaultBlockSize} {
				for _, b := range encodeAll(t, fps, code, size) {
					src, split, first, m := blockParts(t, b.data)
					if m == 0 || len(src) < 16 {
						continue // lanes does not call it
					}
					done, _ := quickBoth(t, src, tbl, split, first, m)
					if size == DefaultBlockSize && m >= 8 {
						require.Positive(t, done, "%s: a sound block decodes quickly", name)
					}
					for range 20 { // damage: flipped bits, a wrong split
						bad := append([]byte(nil), src...)
						for range 1 + rng.IntN(3) {
							i := rng.IntN(len(bad) * 8)
							bad[i/8] ^= 1 << (i % 8)
						}
						s := split
						if rng.IntN(4) == 0 {
							s[rng.IntN(2)] = rng.IntN(len(bad) * 8)
						}
						quickBoth(t, bad, tbl, s, first, m)
					}
				}
			}
		})
	}
}

// FuzzQuickLanes runs both loops on arbitrary bytes and split offsets.
func FuzzQuickLanes(f *testing.F) {
	fps := clustered(3000, 4)
	code, err := Train(fps)
	require.NoError(f, err)
	for _, b := range encodeAll(f, fps, code, 256)[:4] {
		src, split, first, m := blockParts(f, b.data)
		f.Add(src, split[0], split[1], first, m)
	}
	f.Add(make([]byte, 16), 0, 0, uint64(0), 1)
	f.Fuzz(func(t *testing.T, src []byte, s1, s2 int, first uint64, m int) {
		if len(src) < 16 || m <= 0 || m > 1000 || s1 < 0 || s2 < 0 || s1 > len(src)*8 || s2 > len(src)*8 {
			return // quickLanes's preconditions; the header reader enforces them
		}
		quickBoth(t, src, code.Table(), [2]int{s1, s2}, first, m)
	})
}
