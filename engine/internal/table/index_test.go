package table

import (
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/stretchr/testify/require"
)

func TestSearchHelpers(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 5))
	for name, keys := range map[string][]uint64{
		"uniform":   fingerprints.Sorted(fingerprints.Uniform(5000, 1)),
		"clustered": fingerprints.Sorted(fingerprints.Clustered(5000, 2)),
		"one":       {42},
		// close keys: buckets of two and of three keys
		"close": {1 << 40, 1<<40 + 1, 1<<40 + 2, 1<<41 + 7, 1<<41 + 9, 3 << 60, 3<<60 + 1<<20},
		"empty": nil,
	} {
		ti := Index{keys: keys}
		ti.Build()
		probes := []uint64{0, ^uint64(0), 41, 42, 43}
		for range 2000 {
			probes = append(probes, r.Uint64())
			if len(keys) > 0 {
				k := keys[r.IntN(len(keys))]
				probes = append(probes, k, k-1, k+1)
			}
		}
		for _, v := range probes {
			want, _ := slices.BinarySearch(keys, v)
			require.Equal(t, want, ti.Find(v), "%s: find(%016x)", name, v)
			require.Equal(t, want, cache.LowerBound(keys, v), "%s: lowerBound(%016x)", name, v)
		}
		// StartCached: Start, and what the block's slot holds, with
		// slots apart and in a slab whose blocks are cached or not, and a
		// pending list on the last block (start may then step back).
		for _, pendLast := range []bool{false, true} {
			ti.pend = nil
			if pendLast && len(keys) > 0 {
				ti.pend = make([]uint16, len(keys))
				ti.pend[len(keys)-1] = 1
			}
			for _, slab := range []bool{false, true} {
				ti.slab, ti.slots = nil, make([]*cache.Slot, len(keys))
				for j := range ti.slots {
					ti.slots[j] = new(cache.Slot)
				}
				if slab {
					ti.SlabSlots()
				}
				blocks := make([]*cache.Entry, len(keys))
				for j := range blocks {
					if j%3 != 2 { // some slots hold nothing
						blocks[j] = cache.NewEntry(cache.Pack([]uint64{keys[j]}), nil)
						ti.Slot(j).Store(blocks[j])
					}
				}
				held := 0
				for _, v := range probes {
					j, b, ok := ti.StartCached(v)
					require.Equal(t, ti.Start(v), j, "%s: StartCached(%016x)", name, v)
					if ok {
						held++
						require.Less(t, j, len(keys))
						require.Same(t, blocks[j], b, "%s: StartCached(%016x): block %d", name, v, j)
					}
				}
				if !slab {
					require.Zero(t, held, "%s: slots apart are read by the caller", name)
				} else if name == "uniform" { // clustered keys crowd some buckets
					require.Greater(t, held, len(probes)/2, "%s: the slot is read with the keys for most probes", name)
				}
			}
		}
	}
}

// TestStartReadsLastPendingList: a range above every block key starts at
// the last block when its pending list may hold values there.
func TestStartReadsLastPendingList(t *testing.T) {
	tests := []struct {
		name string
		pend []uint16
		lo   uint64
		want int
	}{
		{"inside", nil, 15, 1},
		{"on a key", nil, 20, 1},
		{"above, no pending lists", nil, 35, 3},
		{"above, pending elsewhere", []uint16{3, 0, 0}, 35, 3},
		{"above, last block pending", []uint16{0, 0, 2}, 35, 2},
	}
	for _, tt := range tests {
		ti := Index{keys: []uint64{10, 20, 30}, pend: tt.pend}
		ti.Build()
		require.Equal(t, tt.want, ti.Start(tt.lo), tt.name)
	}
}
