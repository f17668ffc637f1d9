package codec

import (
	"bytes"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func streamOf(t testing.TB, fps []uint64, blockSize int) []byte {
	code, err := Train(fps)
	require.NoError(t, err)
	var buf bytes.Buffer
	w, err := NewStreamWriter(&buf, code, blockSize)
	require.NoError(t, err)
	for _, fp := range fps {
		require.NoError(t, w.Add(fp))
	}
	require.NoError(t, w.Close())
	require.Equal(t, int64(buf.Len()), w.Size())
	return buf.Bytes()
}

func readStream(data []byte) ([]uint64, error) {
	r, err := NewStreamReader(bytes.NewReader(data))
	if err != nil {
		return nil, err
	}
	var all, block []uint64
	for {
		block, err = r.Next(block)
		if err == io.EOF {
			return all, nil
		}
		if err != nil {
			return all, err
		}
		all = append(all, block...)
	}
}

func TestStreamRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, n := range []int{1, 2, 100, 20000} {
		fps := make([]uint64, n)
		for i := range fps {
			fps[i] = rng.Uint64()
		}
		slices.Sort(fps)
		fps = slices.Compact(fps)
		data := streamOf(t, fps, DefaultBlockSize)
		got, err := readStream(data)
		require.NoError(t, err, "n=%d", n)
		assert.Equal(t, fps, got, "n=%d", n)
	}
}

func TestStreamErrors(t *testing.T) {
	fps := []uint64{1, 5, 1 << 40, 1<<63 + 7}
	good := streamOf(t, fps, DefaultBlockSize)
	body := good[len(streamMagic)+32:]
	for _, tc := range []struct {
		name, want string
		data       []byte
	}{
		{"empty file", "header cut off", nil},
		{"wrong magic", "not a block stream", append([]byte("SHDBBLK9"), good[8:]...)},
		{"bad code", "block stream's code", append(append([]byte(streamMagic), make([]byte, 32)...), body...)},
		{"cut block", "cut off", good[:len(good)-3]},
		{"cut length", "cut off or too long", append(slices.Clone(good), 0x80)},
		{"zero length", "length 0", append(slices.Clone(good), 0)},
		{"flipped byte", "offset 40: checksum", func() []byte { b := slices.Clone(good); b[len(b)-6] ^= 1; return b }()},
		{"flipped key", "offset 40: checksum", func() []byte { b := slices.Clone(good); b[42] ^= 1; return b }()},
	} {
		_, err := readStream(tc.data)
		require.ErrorIs(t, err, ErrCorrupt, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
	}
}

// TestStreamVersion1: a stream of the first layout (magic SHDBBLK1,
// version 2 blocks with their checksums, no keys) reads the same.
func TestStreamVersion1(t *testing.T) {
	fps := uniform(5000, 3)
	code, err := Train(fps)
	require.NoError(t, err)
	c, err := code.MarshalBinary()
	require.NoError(t, err)
	old := append([]byte(streamMagicV1), c...)
	at := 0
	for _, b := range encodeAll(t, fps, code, DefaultBlockSize) {
		h, err := ReadHeader(b.data)
		require.NoError(t, err)
		v2 := asVersion2(t, b, fps[at], nil)
		v2[1] = 0 // the stream's code is id 0; the code id is one byte here
		v2 = fixCRC(v2[:len(v2)-checksumLen])
		old = append(binary.AppendUvarint(old, uint64(len(v2))), v2...)
		at += h.Count
	}
	got, err := readStream(old)
	require.NoError(t, err)
	assert.Equal(t, fps, got)
	old[len(old)-6] ^= 1
	_, err = readStream(old)
	assert.ErrorIs(t, err, ErrCorrupt, "a flipped byte in a version 2 block")
}

// FuzzStreamReader: any bytes give fingerprints or an error, never a panic;
// a stream read whole re-encodes to blocks that read back the same.
func FuzzStreamReader(f *testing.F) {
	f.Add(streamOf(f, []uint64{1, 5, 1 << 40, 1<<63 + 7}, DefaultBlockSize))
	f.Add(streamOf(f, []uint64{0}, MinBlockSize))
	f.Add([]byte(streamMagic))
	f.Fuzz(func(t *testing.T, data []byte) {
		fps, err := readStream(data)
		if err != nil {
			return
		}
		for i := 1; i < len(fps); i++ {
			if fps[i] <= fps[i-1] {
				return // blocks are sorted each, not across: the reader does not promise more
			}
		}
		if len(fps) > 0 {
			got, err := readStream(streamOf(t, fps, DefaultBlockSize))
			require.NoError(t, err)
			require.Equal(t, fps, got)
		}
	})
}
