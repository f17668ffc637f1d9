package huffman

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBitsRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	type wv struct {
		v uint64
		n uint
	}
	var vals []wv
	w := NewWriter(nil)
	for range 5000 {
		n := uint(r.IntN(65))
		v := r.Uint64() // bits above n too: the writer must ignore them
		want := v
		if n < 64 {
			want &= 1<<n - 1
		}
		vals = append(vals, wv{want, n})
		w.WriteBits(v, n)
	}
	total := w.Len()
	buf := w.Bytes()
	assert.Equal(t, (total+7)/8, len(buf))
	rd := NewReader(buf)
	for i, x := range vals {
		require.Equal(t, x.v, rd.ReadBits64(x.n), "value %d (%d bits)", i, x.n)
	}
	assert.Equal(t, total, rd.Consumed())
	require.NoError(t, rd.Err())
	rd.ReadBits(16)
	assert.ErrorIs(t, rd.Err(), ErrShortBuffer)
}

func TestBuildIsOptimalAndCanonical(t *testing.T) {
	var freq [Symbols]uint64
	for s := range freq {
		freq[s] = uint64(1) << (s % 20)
	}
	c := Build(&freq)
	// Kraft sum <= 1, every symbol coded, frequent symbols not longer.
	kraft := 0.0
	for s := range Symbols {
		require.GreaterOrEqual(t, c.Len(s), 1)
		require.LessOrEqual(t, c.Len(s), MaxLen)
		kraft += 1 / float64(uint(1)<<c.Len(s))
		for s2 := range Symbols {
			if freq[s] > freq[s2] {
				assert.LessOrEqual(t, c.Len(s), c.Len(s2))
			}
		}
	}
	assert.LessOrEqual(t, kraft, 1.0)
	w := NewWriter(nil)
	syms := []int{0, 63, 19, 5, 40, 19}
	for _, s := range syms {
		c.Encode(w, s)
	}
	r := NewReader(w.Bytes())
	for _, s := range syms {
		got, err := c.Decode(r)
		require.NoError(t, err)
		assert.Equal(t, s, got)
	}
}

func TestLengthLimit(t *testing.T) {
	// Fibonacci frequencies force an unlimited Huffman tree to depth 63.
	var freq [Symbols]uint64
	a, b := uint64(1), uint64(1)
	for s := range freq {
		freq[s] = a
		a, b = b, a+b
		if a > 1<<60 {
			a, b = 1<<60, 1<<60
		}
	}
	c := Build(&freq)
	for s := range Symbols {
		assert.LessOrEqual(t, c.Len(s), MaxLen)
	}
	_, err := FromLengths(c.lens[:])
	require.NoError(t, err)
}

func TestMarshal(t *testing.T) {
	var freq [Symbols]uint64
	for s := range freq {
		freq[s] = uint64(s * s)
	}
	c := Build(&freq)
	b, err := c.MarshalBinary()
	require.NoError(t, err)
	assert.Len(t, b, 32)
	back, err := Unmarshal(b)
	require.NoError(t, err)
	assert.Equal(t, c.Lengths(), back.Lengths())
	for _, bad := range [][]byte{nil, make([]byte, 31), make([]byte, 32), append(make([]byte, 31), 0xff)} {
		_, err := Unmarshal(bad)
		assert.ErrorIs(t, err, ErrCorrupt)
	}
	ones := make([]uint8, Symbols)
	for i := range ones {
		ones[i] = 1
	}
	_, err = FromLengths(ones)
	assert.ErrorContains(t, err, "oversubscribe")
}

func TestIncompleteCodeRejectsHoles(t *testing.T) {
	lens := make([]uint8, Symbols)
	for i := range lens {
		lens[i] = 7 // 64 words of 7 bits: half the code space
	}
	c, err := FromLengths(lens)
	require.NoError(t, err)
	_, err = c.Decode(NewReader([]byte{0xff, 0xff}))
	assert.ErrorIs(t, err, ErrCorrupt)
}

func FuzzUnmarshal(f *testing.F) {
	var freq [Symbols]uint64
	for s := range freq {
		freq[s] = uint64(s + 1)
	}
	b, _ := Build(&freq).MarshalBinary()
	f.Add(b)
	f.Add(make([]byte, 32))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Unmarshal(data)
		if err != nil {
			return
		}
		// A valid code decodes any bit string without panicking.
		r := NewReader(data)
		for range 64 {
			if _, err := c.Decode(r); err != nil {
				break
			}
		}
	})
}
