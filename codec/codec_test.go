package codec

import (
	"encoding/binary"
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
				got, err = Decode(got, b.data, codes)
				require.NoError(t, err, name)
				assert.Equal(t, b.key, got[len(got)-1], "%s: key is the last fingerprint", name)
				h, err := ReadHeader(b.data)
				require.NoError(t, err)
				assert.Equal(t, len(got)-before, h.Count)
				assert.Equal(t, uint32(7), h.CodeID)
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
		all, err := Decode(nil, b.data, CodeMap{7: code})
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
		got, err := DecodeRange(nil, b.data, CodeMap{7: code}, lo, hi)
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}

func TestCorruptionIsAnError(t *testing.T) {
	fps := uniform(3000, 11)
	code, _ := Train(fps)
	codes := CodeMap{7: code}
	b := encodeAll(t, fps, code, DefaultBlockSize)[0].data
	want, err := Decode(nil, b, codes)
	require.NoError(t, err)
	for i := range b {
		for _, bit := range []byte{1, 0x80} {
			bad := slices.Clone(b)
			bad[i] ^= bit
			got, err := Decode(nil, bad, codes)
			if assert.ErrorIs(t, err, ErrCorrupt, "byte %d bit %x", i, bit) {
				continue
			}
			assert.Equal(t, want, got, "no wrong answer")
		}
	}
	for n := range len(b) {
		_, err := Decode(nil, b[:n], codes)
		assert.ErrorIs(t, err, ErrCorrupt, "truncated to %d", n)
	}
	_, err = Decode(nil, b, CodeMap{})
	assert.ErrorIs(t, err, ErrUnknownCode)
}

// withSplit returns a version 2 block rewritten with other split offsets,
// or as version 1 (no splits) when split is nil, with a valid checksum.
func withSplit(t *testing.T, block []byte, split []int) []byte {
	h, err := ReadHeader(block)
	require.NoError(t, err)
	p := 1 + uvarintLen(uint64(h.CodeID)) + uvarintLen(uint64(h.Count))
	q := p
	for range 2 {
		_, n := binary.Uvarint(block[q:])
		q += n
	}
	out := slices.Clone(block[:p])
	if split == nil {
		out[0] = 1
	}
	for _, s := range split {
		out = binary.AppendUvarint(out, uint64(s))
	}
	out = append(out, block[q:len(block)-checksumLen]...)
	return fixCRC(out)
}

func TestDecodeVersion1(t *testing.T) {
	fps := clustered(3000, 4)
	code, _ := Train(fps)
	codes := CodeMap{7: code}
	var got, gotRange []uint64
	for _, b := range encodeAll(t, fps, code, 256) {
		v1 := withSplit(t, b.data, nil)
		var err error
		got, err = Decode(got, v1, codes)
		require.NoError(t, err)
		gotRange, err = DecodeRange(gotRange, v1, codes, 0, b.key)
		require.NoError(t, err)
	}
	assert.Equal(t, fps, got)
	assert.Equal(t, fps, gotRange)
}

func TestSplitMismatchIsAnError(t *testing.T) {
	fps := uniform(3000, 12)
	code, _ := Train(fps)
	codes := CodeMap{7: code}
	b := encodeAll(t, fps, code, DefaultBlockSize)[0]
	h, err := ReadHeader(b.data)
	require.NoError(t, err)
	s0, s1 := h.split[0], h.split[1]
	for _, split := range [][]int{{0, s1}, {1, s1}, {s0 - 1, s1}, {s0 + 1, s1}, {8 * len(b.data), s1},
		{s0, 0}, {s0, s0}, {s0, s1 - 1}, {s0, s1 + 1}, {s0, 8 * len(b.data)}, {s1, s0}} {
		bad := withSplit(t, b.data, split)
		_, err := Decode(nil, bad, codes)
		assert.ErrorIs(t, err, ErrCorrupt, "whole block, splits %v", split)
		_, err = DecodeRange(nil, bad, codes, 0, b.key)
		assert.ErrorIs(t, err, ErrCorrupt, "range, splits %v", split)
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

func FuzzDecode(f *testing.F) {
	fps := clustered(500, 1)
	code, _ := Train(fps)
	var lens [huffman.Symbols]uint64
	flat := huffman.Build(&lens)
	for _, b := range encodeAll(f, fps, code, 256) {
		f.Add(b.data[:len(b.data)-4], uint64(0), ^uint64(0))
	}
	f.Add([]byte{1, 7, 1, 0, 0, 0, 0, 0, 0, 0, 0}, uint64(0), ^uint64(0))
	f.Fuzz(func(t *testing.T, body []byte, lo, hi uint64) {
		codes := CodeMap{7: code, 0: flat, 1: flat}
		for _, b := range [][]byte{body, fixCRC(body)} {
			got, err := DecodeRange(nil, b, codes, lo, hi)
			if err != nil {
				continue
			}
			for i := range got {
				if got[i] < lo || got[i] > hi || i > 0 && got[i] <= got[i-1] {
					t.Fatalf("decoded %016x out of order or range", got[i])
				}
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
		buf, err = Decode(buf[:0], blocks[i%len(blocks)].data, codes)
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

// BenchmarkDecodeRange is what a probe of a block kept compressed in memory
// would pay: the checksum and the entries up to a range that holds about one
// fingerprint, somewhere in the block.
func BenchmarkDecodeRange(b *testing.B) {
	fps := uniform(1<<20, 1)
	code, _ := Train(fps)
	blocks := encodeAll(b, fps, code, DefaultBlockSize)
	codes := CodeMap{7: code}
	buf := make([]uint64, 0, 1024)  // DecodeRange makes room for the whole block
	width := ^uint64(0) / (1 << 20) // a range of about one fingerprint of 2^20
	r := rand.New(rand.NewPCG(1, 2))
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		blk := blocks[i%len(blocks)]
		h, err := ReadHeader(blk.data)
		if err != nil {
			b.Fatal(err)
		}
		lo := h.First + r.Uint64N(blk.key-h.First)
		if _, err = DecodeRange(buf[:0], blk.data, codes, lo, lo+width); err != nil {
			b.Fatal(err)
		}
	}
}
