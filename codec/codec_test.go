package codec

import (
	"encoding/binary"
	"errors"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simhashdb/simhashdb/huffman"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func uniform(n int, seed uint64) []uint64 { return fingerprints.Sorted(fingerprints.Uniform(n, seed)) }

func clustered(n int, seed uint64) []uint64 {
	return fingerprints.Sorted(fingerprints.Clustered(n, seed))
}

func dense(n int) []uint64 {
	x := make([]uint64, n)
	for i := range x {
		x[i] = uint64(1000 + i)
	}
	return x
}

type block struct {
	key  uint64
	data []byte
}

func encodeAll(t testing.TB, fps []uint64, code *huffman.Code, size int) []block {
	var out []block
	require.NoError(t, Encode(fps, code, 7, size, func(k uint64, b []byte) error {
		out = append(out, block{k, slices.Clone(b)})
		return nil
	}))
	return out
}

func TestRoundTrip(t *testing.T) {
	sets := map[string][]uint64{
		"uniform":   uniform(20000, 1),
		"clustered": clustered(20000, 2),
		"dense":     dense(20000),
		"single":    {42},
		"zero":      {0},
		"max":       {^uint64(0)},
		"extremes":  {0, 1, 1 << 63, ^uint64(0) - 1, ^uint64(0)},
	}
	for name, fps := range sets {
		for _, size := range []int{MinBlockSize, DefaultBlockSize, 4096} {
			code, err := Train(fps)
			require.NoError(t, err)
			codes := CodeMap{7: code}
			blocks := encodeAll(t, fps, code, size)
			var got []uint64
			for _, b := range blocks {
				assert.LessOrEqual(t, len(b.data), size, "%s: block within budget", name)
				before := len(got)
				got, err = Decode(got, b.data, b.key, codes)
				require.NoError(t, err, name)
				assert.Equal(t, b.key, got[len(got)-1], "%s: key is the last fingerprint", name)
				h, err := ReadHeader(b.data)
				require.NoError(t, err)
				assert.Equal(t, len(got)-before, h.Count)
				assert.Equal(t, uint32(7), h.CodeID)
				assert.Equal(t, uint8(Version), h.Version)
			}
			assert.Equal(t, fps, got, "%s size %d", name, size)
		}
	}
}

func TestDecodeRange(t *testing.T) {
	fps := clustered(5000, 9)
	code, _ := Train(fps)
	blocks := encodeAll(t, fps, code, DefaultBlockSize)
	r := rand.New(rand.NewPCG(5, 5))
	for range 200 {
		b := blocks[r.IntN(len(blocks))]
		all, err := Decode(nil, b.data, b.key, CodeMap{7: code})
		require.NoError(t, err)
		lo := all[r.IntN(len(all))]
		hi := lo + r.Uint64()>>r.IntN(64)
		if hi < lo {
			hi = ^uint64(0)
		}
		var want []uint64
		for _, x := range all {
			if x >= lo && x <= hi {
				want = append(want, x)
			}
		}
		for _, data := range [][]byte{b.data, asVersion2(t, b, all[0], nil)} {
			got, err := DecodeRange(nil, data, b.key, CodeMap{7: code}, lo, hi)
			require.NoError(t, err)
			assert.Equal(t, want, got, "version %d", data[0])
		}
	}
}

// TestCorruptionIsAnError: a version 2 block, checksummed, is never read
// wrong; a version 3 block, whose store checksums it (the engine's
// TestTableBlockFlips), still refuses what its layout rules out: a
// truncation, a wrong count, split or key, bits after its entries, and
// whatever it decodes from a flipped bit is sorted and ends at its key.
func TestCorruptionIsAnError(t *testing.T) {
	fps := uniform(3000, 11)
	code, _ := Train(fps)
	codes := CodeMap{7: code}
	b := encodeAll(t, fps, code, DefaultBlockSize)[0]
	want, err := Decode(nil, b.data, b.key, codes)
	require.NoError(t, err)
	v2 := asVersion2(t, b, want[0], nil)
	refused := func(err error) bool { return errors.Is(err, ErrCorrupt) || errors.Is(err, ErrUnknownCode) }
	for i := range v2 {
		for _, bit := range []byte{1, 0x80} {
			bad := slices.Clone(v2)
			bad[i] ^= bit
			got, err := Decode(nil, bad, b.key, codes)
			if !refused(err) {
				assert.Equal(t, want, got, "version 2, byte %d bit %x: no wrong answer", i, bit)
			}
		}
	}
	caught := 0
	for i := range b.data {
		for _, bit := range []byte{1, 0x80} {
			bad := slices.Clone(b.data)
			bad[i] ^= bit
			got, err := Decode(nil, bad, b.key, codes)
			if err != nil {
				assert.True(t, refused(err), "version 3, byte %d bit %x: %v", i, bit, err)
				caught++
				continue
			}
			assert.True(t, slices.IsSorted(got) && got[len(got)-1] == b.key, "version 3, byte %d bit %x: sorted, at its key", i, bit)
		}
	}
	t.Logf("version 3: %d of %d flipped bits refused by the layout alone", caught, 2*len(b.data))
	assert.Positive(t, caught)
	for n := range len(b.data) {
		_, err := Decode(nil, b.data[:n], b.key, codes)
		assert.ErrorIs(t, err, ErrCorrupt, "truncated to %d", n)
		_, err = Decode(nil, v2[:n], b.key, codes)
		assert.ErrorIs(t, err, ErrCorrupt, "version 2 truncated to %d", n)
	}
	_, err = Decode(nil, b.data, want[len(want)-1]-want[0]-1, codes)
	assert.ErrorIs(t, err, ErrCorrupt, "a key below the differences' sum")
	_, err = Decode(nil, v2, b.key+1, codes)
	assert.ErrorIs(t, err, ErrCorrupt, "version 2 with another key")
	_, err = Decode(nil, append(slices.Clone(b.data), 0), b.key, codes)
	assert.ErrorIs(t, err, ErrCorrupt, "a byte after the entries")
	_, err = Decode(nil, b.data, b.key, CodeMap{})
	assert.ErrorIs(t, err, ErrUnknownCode)
}

// asVersion2 returns block b as version 2 (first its first fingerprint),
// with other split offsets if split is not nil, or as version 1 (no
// splits) when split is an empty slice, with a valid checksum.
func asVersion2(t testing.TB, b block, first uint64, split []int) []byte {
	h, err := ReadHeader(b.data)
	require.NoError(t, err)
	require.Equal(t, uint8(Version), h.Version)
	out := binary.AppendUvarint([]byte{2}, uint64(h.CodeID))
	out = binary.AppendUvarint(out, uint64(h.Count))
	switch {
	case split == nil:
		split = h.split[:]
	case len(split) == 0:
		out[0] = 1
	}
	for _, s := range split {
		out = binary.AppendUvarint(out, uint64(s))
	}
	out = binary.BigEndian.AppendUint64(out, first)
	out = append(out, b.data[h.payload:]...)
	return fixCRC(out)
}

func TestDecodeVersions1And2(t *testing.T) {
	fps := clustered(3000, 4)
	code, _ := Train(fps)
	codes := CodeMap{7: code}
	for _, version := range []int{1, 2} {
		var got, gotRange []uint64
		for _, b := range encodeAll(t, fps, code, 256) {
			first := fps[len(got)]
			var old []byte
			if version == 1 {
				old = asVersion2(t, b, first, []int{})
			} else {
				old = asVersion2(t, b, first, nil)
			}
			h, err := ReadHeader(old)
			require.NoError(t, err)
			require.Equal(t, uint8(version), h.Version)
			got, err = Decode(got, old, b.key, codes)
			require.NoError(t, err)
			gotRange, err = DecodeRange(gotRange, old, b.key, codes, 0, b.key)
			require.NoError(t, err)
			_, err = Decode(nil, old, b.key-1, codes)
			require.ErrorIs(t, err, ErrCorrupt, "version %d block read with another key", version)
		}
		assert.Equal(t, fps, got, "version %d", version)
		assert.Equal(t, fps, gotRange, "version %d", version)
	}
}

func TestSplitMismatchIsAnError(t *testing.T) {
	fps := uniform(3000, 12)
	code, _ := Train(fps)
	codes := CodeMap{7: code}
	b := encodeAll(t, fps, code, DefaultBlockSize)[0]
	all, err := Decode(nil, b.data, b.key, codes)
	require.NoError(t, err)
	h, err := ReadHeader(b.data)
	require.NoError(t, err)
	s0, s1 := h.split[0], h.split[1]
	for _, split := range [][]int{{0, s1}, {1, s1}, {s0 - 1, s1}, {s0 + 1, s1}, {8 * len(b.data), s1},
		{s0, 0}, {s0, s0}, {s0, s1 - 1}, {s0, s1 + 1}, {s0, 8 * len(b.data)}, {s1, s0}} {
		bad := asVersion2(t, b, all[0], split)
		_, err := Decode(nil, bad, b.key, codes)
		assert.ErrorIs(t, err, ErrCorrupt, "version 2, whole block, splits %v", split)
		_, err = DecodeRange(nil, bad, b.key, codes, 0, b.key)
		assert.ErrorIs(t, err, ErrCorrupt, "version 2, range, splits %v", split)
		bad = append(appendHeader(nil, h.CodeID, h.Count, [2]int(split), len(b.data)-h.payload), b.data[h.payload:]...)
		_, err = Decode(nil, bad, b.key, codes)
		assert.ErrorIs(t, err, ErrCorrupt, "version 3, splits %v", split)
	}
}

func TestEncoderErrors(t *testing.T) {
	code, _ := Train(dense(10))
	_, err := NewBuilder(code, 1, MinBlockSize-1)
	assert.ErrorIs(t, err, ErrBlockSize)
	err = Encode([]uint64{5, 3}, code, 1, DefaultBlockSize, func(uint64, []byte) error { return nil })
	assert.ErrorIs(t, err, ErrUnsorted)
	err = Encode([]uint64{5, 5}, code, 1, DefaultBlockSize, func(uint64, []byte) error { return nil })
	assert.ErrorIs(t, err, ErrUnsorted)
	_, err = Train([]uint64{2, 1})
	assert.ErrorIs(t, err, ErrUnsorted)
	// Order is enforced across blocks too.
	b, _ := NewBuilder(code, 1, MinBlockSize)
	for i := uint64(0); ; i++ {
		ok, err := b.Add(i << 40)
		require.NoError(t, err)
		if !ok {
			b.Finish(nil)
			_, err := b.Add(1)
			assert.ErrorIs(t, err, ErrUnsorted)
			break
		}
	}
}

func bitsPerFP(t testing.TB, fps []uint64, size int) float64 {
	code, err := Train(fps)
	require.NoError(t, err)
	total := 0
	for _, b := range encodeAll(t, fps, code, size) {
		total += len(b.data)
	}
	return float64(total*8) / float64(len(fps))
}

func TestSizeNearInformationBound(t *testing.T) {
	for _, n := range []int{1 << 16, 1 << 20} {
		fps := uniform(n, uint64(n))
		got, bound := bitsPerFP(t, fps, DefaultBlockSize), Bound(len(fps))
		t.Logf("n=%d: %.3f bits/fp, bound %.3f (+%.2f%%)", n, got, bound, 100*(got/bound-1))
		assert.Less(t, got, bound*1.03, "within 3%% of the bound")
	}
}

// fixCRC returns data with a valid checksum appended, so that the fuzzer
// explores the decoder behind the checksum.
func fixCRC(data []byte) []byte {
	return binary.LittleEndian.AppendUint32(slices.Clone(data), crc32.Checksum(data, castagnoli))
}

// FuzzDecode: any bytes and key decode to sorted fingerprints in range
// ending at the key, or to an error; never a panic. Each input is also
// tried with a valid checksum appended, so that the fuzzer explores the
// version 1 and 2 decoders behind it.
func FuzzDecode(f *testing.F) {
	fps := clustered(500, 1)
	code, _ := Train(fps)
	var lens [huffman.Symbols]uint64
	flat := huffman.Build(&lens)
	for i, b := range encodeAll(f, fps, code, 256) {
		f.Add(b.data, b.key, uint64(0), ^uint64(0))
		if i == 0 {
			v2 := asVersion2(f, b, fps[0], nil)
			f.Add(v2[:len(v2)-4], b.key, uint64(0), ^uint64(0))
		}
	}
	f.Add([]byte{1, 7, 1, 0, 0, 0, 0, 0, 0, 0, 0}, uint64(0), uint64(0), ^uint64(0))
	f.Add([]byte{3, 0, 1, 0, 0}, uint64(5), uint64(0), ^uint64(0))
	f.Fuzz(func(t *testing.T, body []byte, key, lo, hi uint64) {
		codes := CodeMap{7: code, 0: flat, 1: flat}
		for _, b := range [][]byte{body, fixCRC(body)} {
			got, err := DecodeRange(nil, b, key, codes, lo, hi)
			if err != nil {
				continue
			}
			for i := range got {
				if got[i] < lo || got[i] > hi || got[i] > key || i > 0 && got[i] <= got[i-1] {
					t.Fatalf("decoded %016x out of order or range", got[i])
				}
			}
			if whole, err := Decode(nil, b, key, codes); err == nil && whole[len(whole)-1] != key {
				t.Fatalf("decoded whole to %016x, not its key %016x", whole[len(whole)-1], key)
			}
		}
	})
}

func BenchmarkDecode(b *testing.B) {
	fps := uniform(1<<20, 1)
	code, _ := Train(fps)
	blocks := encodeAll(b, fps, code, DefaultBlockSize)
	codes := CodeMap{7: code}
	buf := make([]uint64, 0, 16384)
	n := 0
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		var err error
		blk := blocks[i%len(blocks)]
		buf, err = Decode(buf[:0], blk.data, blk.key, codes)
		if err != nil {
			b.Fatal(err)
		}
		n += len(buf)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds()/1e6, "Mfp/s")
}

func BenchmarkEncode(b *testing.B) {
	fps := uniform(1<<20, 1)
	code, _ := Train(fps)
	b.ResetTimer()
	for b.Loop() {
		if err := Encode(fps, code, 7, DefaultBlockSize, func(uint64, []byte) error { return nil }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(fps))*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mfp/s")
}
