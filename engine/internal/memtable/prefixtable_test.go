package memtable

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPrefixTable checks each against a scan, for prefixes crowded and
// sparse, 0 and all-ones, across growth.
func TestPrefixTable(t *testing.T) {
	tests := []struct {
		name       string
		prefixBits int
		gen        func(r *rand.Rand) uint64
	}{
		{"uniform", 20, func(r *rand.Rand) uint64 { return r.Uint64() }},
		{"crowded prefixes", 20, func(r *rand.Rand) uint64 { return uint64(r.IntN(50))<<44 | r.Uint64()>>20 }},
		{"ends of the range", 16, func(r *rand.Rand) uint64 {
			return []uint64{0, ^uint64(0), 1, 1 << 63, r.Uint64()}[r.IntN(5)] ^ uint64(r.IntN(1<<10))
		}},
		{"one-bit prefix", 1, func(r *rand.Rand) uint64 { return r.Uint64() }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(tt.prefixBits)))
			p := newPrefixTable(tt.prefixBits)
			shift := 64 - tt.prefixBits
			var all []uint64
			check := func() {
				for range 50 {
					q := tt.gen(r) >> shift
					if len(all) > 0 && r.IntN(2) == 0 {
						q = all[r.IntN(len(all))] >> shift
					}
					var got, want []uint64
					p.each(q, func(v uint64) { got = append(got, v) })
					for _, v := range all {
						if v>>shift == q {
							want = append(want, v)
						}
					}
					slices.Sort(got)
					slices.Sort(want)
					require.Equal(t, want, got, "prefix %x", q)
				}
			}
			check() // empty
			seen := map[uint64]bool{}
			for i := range 5000 {
				v := tt.gen(r)
				if seen[v] {
					continue
				}
				seen[v] = true
				p.add(v)
				all = append(all, v)
				if i%700 == 0 {
					check()
				}
			}
			check()
			require.Equal(t, len(all), p.n)
			require.LessOrEqual(t, len(p.slots)*(8+1), len(all)*prefixSlotBytes+64*9, "memory per fingerprint")
		})
	}
}
