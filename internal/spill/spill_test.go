package spill

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

type rec struct {
	a, b uint64
	v    string
}

func cmpRec(x, y rec) int { return cmp.Or(cmp.Compare(x.a, y.a), cmp.Compare(x.b, y.b)) }

// genRun is n records in order with values of up to maxV bytes, keys drawn
// from a few values so that runs share them.
func genRun(rng *rand.Rand, n, maxV int) []rec {
	seen := map[[2]uint64]bool{}
	var rs []rec
	for len(rs) < n {
		a, b := rng.Uint64N(64), rng.Uint64N(64)
		if rng.IntN(8) == 0 {
			a, b = rng.Uint64(), rng.Uint64()
		}
		if seen[[2]uint64{a, b}] {
			continue
		}
		seen[[2]uint64{a, b}] = true
		v := make([]byte, rng.IntN(maxV+1))
		for i := range v {
			v[i] = byte(rng.Uint32())
		}
		rs = append(rs, rec{a, b, string(v)})
	}
	slices.SortFunc(rs, cmpRec)
	return rs
}

func write(t testing.TB, rs []rec) []byte {
	var buf bytes.Buffer
	w := NewWriter(&buf)
	for _, r := range rs {
		require.NoError(t, w.Append(r.a, r.b, []byte(r.v)))
	}
	require.NoError(t, w.Close())
	require.EqualValues(t, len(rs), w.Records())
	return buf.Bytes()
}

func readAll(data []byte) ([]rec, error) {
	r := NewReader(bytes.NewReader(data), "test")
	var out []rec
	for r.Next() {
		x := r.Record()
		out = append(out, rec{x.A, x.B, string(x.V)})
	}
	return out, r.Err()
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ n, maxV int }{{0, 0}, {1, 0}, {10, 3}, {5000, 40}, {300, 3000}, {3, MaxValue}} {
		t.Run(fmt.Sprintf("n=%d,maxV=%d", tc.n, tc.maxV), func(t *testing.T) {
			rs := genRun(rng, tc.n, tc.maxV)
			got, err := readAll(write(t, rs))
			require.NoError(t, err)
			if len(rs) == 0 {
				require.Empty(t, got)
				return
			}
			require.Equal(t, rs, got)
		})
	}
}

func TestWriterRefuses(t *testing.T) {
	w := NewWriter(&bytes.Buffer{})
	require.NoError(t, w.Append(5, 5, nil))
	require.ErrorContains(t, w.Append(5, 5, nil), "out of order")
	require.ErrorContains(t, NewWriter(&bytes.Buffer{}).Append(1, 1, make([]byte, MaxValue+1)), "at most")
	w = NewWriter(&bytes.Buffer{})
	require.NoError(t, w.Close())
	require.Error(t, w.Append(1, 1, nil))
}

// TestDamage: every flipped byte and every cut of a run is an error
// wrapping ErrCorrupt that names the run, never a panic nor records that
// differ from the ones written.
func TestDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	rs := genRun(rng, 8000, 30) // several blocks
	data := write(t, rs)
	require.Greater(t, len(data), 2*blockSize)
	check := func(t *testing.T, bad []byte, what string) {
		got, err := readAll(bad)
		require.Error(t, err, what)
		require.True(t, errors.Is(err, ErrCorrupt), "%s: %v", what, err)
		require.ErrorContains(t, err, "test")
		require.Equal(t, len(got), len(slices.Clip(rs[:len(got)])), what)
		for i := range got {
			if got[i] != rs[i] {
				require.Equal(t, rs[i], got[i], what)
			}
		}
	}
	for i := 0; i < len(data); i += 1 + rng.IntN(97) {
		bad := slices.Clone(data)
		bad[i] ^= 1 << rng.IntN(8)
		check(t, bad, fmt.Sprintf("flip at %d", i))
	}
	for cut := 1; cut < len(data); cut += 1 + rng.IntN(4001) {
		if got, err := readAll(data[:cut]); err == nil {
			// A cut at a block's end reads as a shorter run: the caller
			// counts records (Writer.Records).
			for i := range got {
				if got[i] != rs[i] {
					require.Equal(t, rs[i], got[i])
				}
			}
			continue
		}
		check(t, data[:cut], fmt.Sprintf("cut at %d", cut))
	}
}

func TestMerge(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, runs := range []int{0, 1, 2, 7} {
		t.Run(fmt.Sprint(runs), func(t *testing.T) {
			type tagged struct {
				rec
				run int
			}
			var want []tagged
			var readers []*Reader
			for i := range runs {
				rs := genRun(rng, rng.IntN(3000), 20)
				for _, r := range rs {
					want = append(want, tagged{r, i})
				}
				readers = append(readers, NewReader(bytes.NewReader(write(t, rs)), fmt.Sprint(i)))
			}
			slices.SortStableFunc(want, func(x, y tagged) int { return cmp.Or(cmpRec(x.rec, y.rec), cmp.Compare(x.run, y.run)) })
			var got []tagged
			m := NewMerger(readers)
			for m.Next() {
				x := m.Record()
				got = append(got, tagged{rec{x.A, x.B, string(x.V)}, m.Run()})
			}
			require.NoError(t, m.Err())
			require.Equal(t, len(want), len(got))
			if len(want) > 0 {
				require.Equal(t, want, got)
			}
		})
	}
}

func TestMergeStopsAtDamage(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	good := write(t, genRun(rng, 3000, 20))
	bad := slices.Clone(write(t, genRun(rng, 3000, 20)))
	bad[len(bad)/2] ^= 0x10
	m := NewMerger([]*Reader{NewReader(bytes.NewReader(good), "good"), NewReader(bytes.NewReader(bad), "bad")})
	for m.Next() {
	}
	require.ErrorIs(t, m.Err(), ErrCorrupt)
	require.ErrorContains(t, m.Err(), "bad")
}

func FuzzReader(f *testing.F) {
	rng := rand.New(rand.NewPCG(9, 10))
	f.Add([]byte{})
	f.Add(write(f, genRun(rng, 3, 5)))
	f.Add(write(f, genRun(rng, 200, 40)))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := readAll(data)
		if err != nil {
			return
		}
		// What reads without an error is a run in order, which a Writer
		// writes back to what it read.
		again, err := readAll(write(t, got))
		require.NoError(t, err)
		require.Equal(t, len(got), len(again))
		if len(got) > 0 {
			require.Equal(t, got, again)
		}
	})
}
