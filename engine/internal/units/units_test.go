package units

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUnitDirNext checks the units a flush carries in the cache against a
// model: random cached units, random additions, replacements and removals
// of postings (few fingerprints, so that they collide), and units that
// grow past unitMax. The directory before is made new (a slab: every unit
// has a slot) or by a flush (only the units queries needed have one).
func TestUnitDirNext(t *testing.T) {
	type posting struct{ fp, id uint64 }
	for seed := range uint64(200) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			r := rand.New(rand.NewPCG(seed, 1))
			const docs = 64 * 2 // two unit bits
			d := New(docs, DefaultMax)
			require.Equal(t, uint(62), d.shift)
			if seed%2 == 1 {
				d = &Dir{shift: d.shift, max: d.max, slots: make([]atomic.Pointer[cache.Slot], 4)}
			}
			fpOf := func() uint64 { return uint64(r.IntN(4))<<62 | uint64(r.IntN(5)) }
			model := map[posting]string{}
			for id := range uint64(16) { // a document has one fingerprint
				if r.IntN(4) > 0 {
					model[posting{fpOf(), id}] = []string{"", "a", "bb"}[r.IntN(3)]
				}
			}
			// Cache units 0..2 from the model; unit 3 stays uncached.
			unit := func(u uint64) (fps, ids []uint64, names []string) {
				keys := slices.SortedFunc(func(yield func(posting) bool) {
					for p := range model {
						if p.fp>>62 == u && !yield(p) {
							return
						}
					}
				}, func(a, b posting) int {
					if a.fp != b.fp {
						return cmp.Compare(a.fp, b.fp)
					}
					return cmp.Compare(a.id, b.id)
				})
				for _, p := range keys {
					fps, ids, names = append(fps, p.fp), append(ids, p.id), append(names, model[p])
				}
				return
			}
			for u := range uint64(3) {
				fps, ids, names := unit(u)
				d.Slot(u).Store(cache.NewUnit(fps, ids, names))
			}
			// As a flush makes them: each document once, its old posting
			// removed and its new one added.
			var ch []Change
			for _, id := range r.Perm(16)[:r.IntN(16)] {
				id := uint64(id)
				for p := range model {
					if p.id == id {
						delete(model, p)
						ch = append(ch, Change{FP: p.fp, ID: id})
					}
				}
				if r.IntN(3) > 0 {
					p := posting{fpOf(), id}
					model[p] = []string{"", "c"}[r.IntN(2)]
					ch = append(ch, Change{FP: p.fp, ID: id, Name: model[p], Add: true})
				}
			}
			d.max = 6
			n, dropped, carry := d.Next(docs, slices.Clone(ch))
			require.Nil(t, n.slab, "a flush's directory shares slots")
			changed := map[uint64]bool{}
			for _, c := range ch {
				changed[c.FP>>62] = true
			}
			nDropped := 0
			for u := range uint64(4) {
				old := d.Peek(u)
				got := n.slots[u].Load()
				if !changed[u] {
					require.Same(t, old, got, "unit %d: unchanged, same slot", u)
					continue
				}
				if old != nil {
					nDropped++
				}
				if got == nil {
					fps, _, _ := unit(u)
					require.True(t, old == nil || old.Peek() == nil || len(fps) > d.max, "unit %d: dropped, not carried", u)
					continue
				}
				require.NotSame(t, old, got)
				i := slices.IndexFunc(carry, func(c Carried) bool { return c.Slot == got })
				require.GreaterOrEqual(t, i, 0, "unit %d: a new slot is a carried one", u)
				fps, ids, names := unit(u)
				b := carry[i].Entry
				require.False(t, b.Big, "unit %d: a carried unit is not big", u)
				require.LessOrEqual(t, b.Packed.Len(), d.max, "unit %d: a carried unit is cacheable", u)
				require.Equal(t, fps, b.Packed.AppendTo(nil), "unit %d", u)
				require.Equal(t, ids, b.Packed.AppendIDs(nil), "unit %d", u)
				gotNames := make([]string, len(fps))
				for i := range gotNames {
					gotNames[i] = b.Name(i)
				}
				want := names
				if want == nil {
					want = make([]string, len(fps))
				}
				require.Equal(t, want, gotNames, "unit %d: names", u)
			}
			require.Len(t, dropped, nDropped)
		})
	}
}

// TestUnitDirResize: a directory two bits or more off its size for the
// documents starts again empty and gives back every slot; one bit off, it
// keeps its units.
func TestUnitDirResize(t *testing.T) {
	d := New(64*4, DefaultMax) // 3 bits
	for u := range uint64(8) {
		d.Slot(u)
	}
	for _, tc := range []struct {
		docs    int64
		bits    int
		dropped int
	}{{64 * 8, 3, 0}, {64 * 2, 3, 0}, {64 * 16, 5, 8}, {64, 1, 8}, {0, 0, 8}} {
		n, dropped, _ := d.Next(tc.docs, nil)
		assert.Equal(t, tc.bits, 64-int(n.shift), "docs %d", tc.docs)
		assert.Equal(t, uint64(1)<<tc.bits, n.Len(), "docs %d", tc.docs)
		assert.Equal(t, tc.dropped > 0, n.slab != nil, "docs %d: a directory made again is a slab", tc.docs)
		assert.Len(t, dropped, tc.dropped, "docs %d", tc.docs)
	}
}
