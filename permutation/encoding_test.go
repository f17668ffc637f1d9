package permutation

import (
	"encoding/binary"
	"hash/crc32"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzUnmarshalDesign: any bytes decode to a valid design or fail with
// ErrInvalid, never a panic; a design that decodes encodes back to the
// same bytes. Each input is also tried with its checksum made right, so
// that the fuzzer reaches past it (K and the table count are capped there to
// keep the coverage proof of each try short).
func FuzzUnmarshalDesign(f *testing.F) {
	for _, k := range []int{1, 3} {
		d, err := Blocks(k, k+1)
		require.NoError(f, err)
		b, err := d.MarshalBinary()
		require.NoError(f, err)
		f.Add(b)
	}
	d, err := Covering(2, 6, 2)
	require.NoError(f, err)
	d.K, d.Exact = 3, 2
	b, err := d.MarshalBinary()
	require.NoError(f, err)
	f.Add(b)
	f.Add([]byte(magic))
	f.Fuzz(func(t *testing.T, b []byte) {
		try := func(b []byte) {
			var d Design
			if err := d.UnmarshalBinary(b); err != nil {
				require.ErrorIs(t, err, ErrInvalid)
				return
			}
			again, err := d.MarshalBinary()
			require.NoError(t, err)
			require.Equal(t, b, again)
		}
		try(b)
		if len(b) < len(magic)+3+4 || b[len(magic)+1] > 3 {
			return
		}
		count := len(magic) + 2
		if b[len(magic)] == versionExact {
			count++
		}
		if n, m := binary.Uvarint(b[count:]); m > 0 && n <= 64 {
			body := b[:len(b)-4]
			try(binary.LittleEndian.AppendUint32(append([]byte(nil), body...), crc32.Checksum(body, castagnoli)))
		}
	})
}
