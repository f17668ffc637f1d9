package neardup

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPack(t *testing.T) {
	var b []byte
	want := []uint64{0, 1, 1 << 63, ^uint64(0)}
	for _, v := range want {
		b = appendFP(b, v)
	}
	got, err := unpack(nil, b)
	require.NoError(t, err)
	assert.Equal(t, want, got)
	_, err = unpack(nil, b[:7])
	assert.ErrorContains(t, err, "not a multiple of 8")
}

func TestPackCounted(t *testing.T) {
	type vc struct {
		v uint64
		n int64
	}
	want := []vc{{0, 1}, {7, 10000}, {^uint64(0), 1 << 40}}
	var b []byte
	for _, x := range want {
		b = appendCounted(b, x.v, x.n)
	}
	var got []vc
	require.NoError(t, unpackCounted(b, func(v uint64, n int64) { got = append(got, vc{v, n}) }))
	assert.Equal(t, want, got)
	for _, tc := range []struct {
		name, want string
		b          []byte
	}{
		{"cut fingerprint", "cut off", b[:5]},
		{"no count", "cut off", b[:8]},
		{"zero count", "bad count", append(appendFP(nil, 3), 0)},
		{"overlong count", "bad count", append(appendFP(nil, 3), 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 1)},
	} {
		assert.ErrorContains(t, unpackCounted(tc.b, func(uint64, int64) {}), tc.want, tc.name)
	}
}

// FuzzUnpackCounted: the batches cross the network between workers; any
// bytes give counted fingerprints that pack back to the same bytes, or an
// error.
func FuzzUnpackCounted(f *testing.F) {
	f.Add(appendCounted(appendCounted(nil, 5, 1), 9, 300))
	f.Add([]byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, b []byte) {
		var again []byte
		if err := unpackCounted(b, func(v uint64, n int64) { again = appendCounted(again, v, n) }); err != nil {
			return
		}
		// Uvarints have one shortest form; others decode too, so compare
		// what they decode to.
		var x, y []int64
		require.NoError(t, unpackCounted(again, func(v uint64, n int64) { x = append(x, int64(v), n) }))
		require.NoError(t, unpackCounted(b, func(v uint64, n int64) { y = append(y, int64(v), n) }))
		require.Equal(t, y, x)
	})
}
