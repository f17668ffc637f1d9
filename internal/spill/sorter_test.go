package spill

import (
	"cmp"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSorter: records added in any order, with repeated keys, come back
// in order and once each, from one run or many, and the runs are removed.
func TestSorter(t *testing.T) {
	for _, c := range []struct {
		name   string
		n      int
		memory int
		keys   uint64 // keys are drawn below it: small means many repeats
	}{
		{"one run", 1000, 1 << 20, 1 << 40},
		{"many runs", 20000, 1 << 16, 1 << 40},
		{"repeats within and across runs", 20000, 1 << 16, 64},
		{"none", 0, 1 << 16, 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			r := rand.New(rand.NewPCG(7, uint64(c.n)))
			s := NewSorter(dir, c.memory)
			want := map[[2]uint64][]byte{}
			for i := range c.n {
				a, b := r.Uint64N(c.keys), r.Uint64N(c.keys)
				v := binary.LittleEndian.AppendUint64(nil, uint64(i))
				v = append(v, make([]byte, r.IntN(40))...)
				require.NoError(t, s.Add(a, b, v))
				if _, ok := want[[2]uint64{a, b}]; !ok {
					want[[2]uint64{a, b}] = v
				}
			}
			assert.EqualValues(t, c.n, s.Added())
			m, err := s.Merge()
			require.NoError(t, err)
			var got [][2]uint64
			for m.Next() {
				rec := m.Record()
				k := [2]uint64{rec.A, rec.B}
				got = append(got, k)
				assert.Equal(t, want[k], rec.V, "the value first added of keys %v", k)
			}
			require.NoError(t, m.Err())
			var keys [][2]uint64
			for k := range want {
				keys = append(keys, k)
			}
			slices.SortFunc(keys, func(x, y [2]uint64) int { return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1])) })
			assert.Equal(t, keys, got)
			if c.memory < c.n*24 {
				assert.Greater(t, len(s.files), 1, "runs written")
			}
			require.NoError(t, s.Close())
			left, err := os.ReadDir(dir)
			require.NoError(t, err)
			assert.Empty(t, left, "runs left behind")
			assert.Error(t, s.Add(1, 2, nil), "a closed sorter")
		})
	}
}

// TestSorterDamage: a run damaged on disk is reported by name, not read
// as records.
func TestSorterDamage(t *testing.T) {
	dir := t.TempDir()
	s := NewSorter(dir, 1<<16)
	defer s.Close()
	for i := range 10000 {
		require.NoError(t, s.Add(uint64(i), 0, []byte("value")))
	}
	require.NoError(t, s.spill())
	f := s.files[0]
	_, err := f.WriteAt([]byte{0xff, 0xff}, 100)
	require.NoError(t, err)
	m, err := s.Merge()
	require.NoError(t, err)
	for m.Next() {
	}
	require.ErrorIs(t, m.Err(), ErrCorrupt)
	assert.Contains(t, m.Err().Error(), f.Name())
}
