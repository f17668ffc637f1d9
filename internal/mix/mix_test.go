package mix

import (
	"math/bits"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestValues pins outputs that stored sketches and fingerprints and the
// placement of documents on shards depend on.
func TestValues(t *testing.T) {
	for _, c := range []struct {
		name string
		f    func(uint64) uint64
		in   uint64
		want uint64
	}{
		{"Murmur3 0", Murmur3, 0, 0},
		{"Murmur3 1", Murmur3, 1, 0xb456bcfc34c2cb2c},
		{"Murmur3 max", Murmur3, ^uint64(0), 0x64b5720b4b825f21},
		{"SplitMix64 0", SplitMix64, 0, 0},
		{"SplitMix64 gamma", SplitMix64, 0x9e3779b97f4a7c15, 0xe220a8397b1dcdaf},
	} {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, c.f(c.in), "%#x", c.f(c.in))
		})
	}
}

// TestAvalanche: flipping one input bit flips about half the output bits,
// from inputs in an arithmetic progression (addresses of a slice's
// elements), where a multiplicative hash keeps its structure.
func TestAvalanche(t *testing.T) {
	for name, f := range map[string]func(uint64) uint64{"Murmur3": Murmur3, "SplitMix64": SplitMix64} {
		t.Run(name, func(t *testing.T) {
			flips, n := 0, 0
			for i := uint64(1); i <= 1000; i++ {
				x := 0xc000010000 + 48*i
				for b := range 64 {
					flips += bits.OnesCount64(f(x) ^ f(x^1<<b))
					n++
				}
			}
			require.InDelta(t, 32, float64(flips)/float64(n), 0.5)
		})
	}
}
