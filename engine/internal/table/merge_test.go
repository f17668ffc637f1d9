package table

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/simhashdb/simhashdb/vfs"
	"github.com/stretchr/testify/require"
)

// mergeTable is one table in a Pebble store of its own, merged into
// round after round as flushes do, against the set it must hold.
type mergeTable struct {
	t     *testing.T
	db    *store.Store
	idx   Index
	cache *cache.Cache
	want  map[uint64]bool
	block int
}

const mergeTestTable = 3

func newMergeTable(t *testing.T, initial []uint64, block int) *mergeTable {
	db, err := store.Open(t.TempDir(), store.Options{FS: vfs.Default, Logger: slog.New(slog.DiscardHandler), CacheSize: 1 << 20, NewOrder: store.KeyOrder})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	m := &mergeTable{t: t, db: db, idx: Index{codes: codec.CodeMap{}}, cache: cache.New(1 << 20), want: map[uint64]bool{}, block: block}
	initial = slices.Compact(fingerprints.Sorted(initial))
	if len(initial) > 0 {
		code, err := codec.Train(initial)
		require.NoError(t, err)
		m.idx = Index{}
		m.idx.AddCode(1, code)
		b := db.NewBatch()
		w := Writer{Table: mergeTestTable, Blocks: batchSetter{b}, Dir: batchSetter{b}, Index: &m.idx}
		require.NoError(t, codec.Encode(initial, code, 1, block, func(key uint64, blk []byte) error { return w.Block(key, blk, nil) }))
		require.NoError(t, db.Commit(context.Background(), db.BatchWrites(b)))
		b.Close()
		m.idx.SlabSlots()
	}
	m.idx.Build()
	for _, v := range initial {
		m.want[v] = true
	}
	return m
}

// merge runs one merge of adds (not stored) and dels (stored), applies
// its batches, and checks the table.
func (m *mergeTable) merge(adds, dels []uint64) MergeResult {
	t := m.t
	adds, dels = fingerprints.Sorted(slices.Clone(adds)), fingerprints.Sorted(slices.Clone(dels))
	old := m.idx
	next := Index{codes: old.codes, code: old.code}
	bs := Batches{Blocks: m.db.NewBatch(), Dir: m.db.NewBatch(), Pend: m.db.NewBatch()}
	defer bs.Close()
	in := Merge{Table: mergeTestTable, Old: &old, New: &next, BlockSize: m.block, Cache: m.cache,
		Read: func(j int) ([]uint64, []uint64, error) {
			return DecodeBlock(m.db, old.Codes(), mergeTestTable, old.Keys()[j], old.Pending(j), nil)
		},
		Batches: &bs}
	r, err := in.Run(adds, dels)
	require.NoError(t, err)
	require.NoError(t, m.db.Commit(context.Background(), m.db.BatchWrites(bs.Blocks), m.db.BatchWrites(bs.Dir), m.db.BatchWrites(bs.Pend)))
	if r.Code != nil { // a new code, which the caller keeps
		require.Contains(t, next.Codes(), next.Code())
	}
	require.Equal(t, len(adds), r.Added, "every add is new")
	require.Equal(t, len(dels), r.Removed, "every del was stored")
	for _, v := range adds {
		m.want[v] = true
	}
	for _, v := range dels {
		delete(m.want, v)
	}
	m.idx = next
	m.check()
	return r
}

// check decodes every block of the table with its pending list: together
// the set the table must hold, each block's values in its key range, and
// no block, directory entry or pending list left over in the store.
func (m *mergeTable) check() {
	t, ti := m.t, &m.idx
	var got []uint64
	for j, key := range ti.Keys() {
		fps, pend, err := DecodeBlock(m.db, ti.Codes(), mergeTestTable, key, ti.Pending(j), nil)
		require.NoError(t, err, "block %d", j)
		all, err := MergePending(mergeTestTable, key, fps, pend)
		require.NoError(t, err)
		require.NotEmpty(t, fps, "block %d is empty", j)
		require.Equal(t, key, fps[len(fps)-1], "block %d ends with its key", j)
		for _, v := range all {
			if j > 0 {
				require.Greater(t, v, ti.Keys()[j-1], "block %d holds %016x below its range", j, v)
			}
			if j < len(ti.Keys())-1 {
				require.LessOrEqual(t, v, key, "block %d holds %016x above its key", j, v)
			}
		}
		got = append(got, all...)
	}
	want := make([]uint64, 0, len(m.want))
	for v := range m.want {
		want = append(want, v)
	}
	if len(want) == 0 {
		require.Empty(t, got)
	} else {
		require.Equal(t, fingerprints.Sorted(want), got)
	}
	// What the store holds of the table is what the directory says.
	for _, space := range []byte{format.SpaceTables, format.SpaceBlockDir, format.SpacePending} {
		lo, hi := format.TableKey(space, mergeTestTable, 0), format.TableKey(space, mergeTestTable+1, 0)
		it, err := m.db.NewIter(store.IterOptions{Lower: lo, Upper: hi})
		require.NoError(t, err)
		var keys []uint64
		for it.First(); it.Valid(); it.Next() {
			tb, key, err := format.ParseTableKey(space, it.Key(), mergeTestTable+1)
			require.NoError(t, err)
			require.Equal(t, mergeTestTable, tb)
			keys = append(keys, key)
		}
		require.NoError(t, it.Close())
		var wantKeys []uint64
		for _, key := range ti.Keys() {
			if space != format.SpacePending {
				wantKeys = append(wantKeys, key)
			}
		}
		if space == format.SpacePending {
			for j, key := range ti.Keys() {
				if ti.Pending(j) > 0 {
					wantKeys = append(wantKeys, key)
				}
			}
		}
		require.Equal(t, wantKeys, keys, "keyspace %d", space)
	}
}

// notIn returns n random values that t does not hold.
func (m *mergeTable) notIn(r *rand.Rand, n int, gen func() uint64) []uint64 {
	var out []uint64
	seen := map[uint64]bool{}
	for len(out) < n {
		v := gen()
		if !m.want[v] && !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// some returns up to n values t holds, chosen at random.
func (m *mergeTable) some(r *rand.Rand, n int) []uint64 {
	held := make([]uint64, 0, len(m.want))
	for v := range m.want {
		held = append(held, v)
	}
	slices.Sort(held)
	r.Shuffle(len(held), func(i, j int) { held[i], held[j] = held[j], held[i] })
	return held[:min(n, len(held))]
}

// TestMergeAgainstSet: merges of adds and removals, round after round,
// leave a table whose blocks and pending lists hold exactly the set they
// must, in order, with nothing stale left in the store: adds that join
// pending lists until they are full, blocks rewritten and split, blocks
// emptied and removed, an empty table filled, fingerprint 0 and all-ones,
// clustered values, a table emptied completely.
func TestMergeAgainstSet(t *testing.T) {
	for _, tc := range []struct {
		name    string
		initial []uint64
		gen     func(r *rand.Rand) func() uint64
	}{
		{"uniform", fingerprints.Uniform(3000, 1), func(r *rand.Rand) func() uint64 { return r.Uint64 }},
		{"clustered", fingerprints.Clustered(3000, 2), func(r *rand.Rand) func() uint64 {
			base := r.Uint64() &^ 0xfffff
			return func() uint64 { return base | r.Uint64()&0xfffff }
		}},
		{"empty at first", nil, func(r *rand.Rand) func() uint64 { return r.Uint64 }},
		{"edges", []uint64{0, 1, ^uint64(0) - 1, ^uint64(0)}, func(r *rand.Rand) func() uint64 {
			return func() uint64 {
				if r.IntN(2) == 0 {
					return r.Uint64N(1 << 16)
				}
				return ^r.Uint64N(1 << 16)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(7, uint64(len(tc.name))))
			gen := tc.gen(r)
			m := newMergeTable(t, tc.initial, 256)
			pended, written := 0, 0
			for round := range 40 {
				var adds, dels []uint64
				switch round % 4 {
				case 0: // a few adds: pending lists
					adds = m.notIn(r, 1+r.IntN(20), gen)
				case 1: // many adds: lists fill, blocks are rewritten
					adds = m.notIn(r, 200+r.IntN(400), gen)
				case 2: // removals beside adds
					dels = m.some(r, 1+r.IntN(100))
					adds = m.notIn(r, r.IntN(50), gen)
				case 3: // removals alone, a whole run of blocks at times
					dels = m.some(r, r.IntN(300))
				}
				if len(adds) == 0 && len(dels) == 0 {
					continue
				}
				res := m.merge(adds, dels)
				pended += res.Pended
				written += res.Written
			}
			require.Positive(t, pended, "some adds joined pending lists")
			require.Positive(t, written, "some blocks were rewritten")
			m.merge(nil, m.some(r, len(m.want)))
			require.Empty(t, m.idx.Keys(), "a table emptied has no block")
			m.merge(m.notIn(r, 500, gen), nil)
		})
	}
}

// TestMergeLosesNoBlock: a merge whose adds all fall in one block's range
// leaves the other blocks as they were, their keys and bytes unchanged.
func TestMergeLosesNoBlock(t *testing.T) {
	initial := fingerprints.Uniform(5000, 9)
	m := newMergeTable(t, initial, 256)
	require.Greater(t, len(m.idx.Keys()), 10)
	before := map[uint64][]byte{}
	for _, key := range m.idx.Keys() {
		v, c, err := m.db.Get(format.TableKey(format.SpaceTables, mergeTestTable, key))
		require.NoError(t, err)
		before[key] = bytes.Clone(v)
		c.Close()
	}
	j := len(m.idx.Keys()) / 2
	lo, hi := m.idx.Keys()[j-1]+1, m.idx.Keys()[j]
	r := rand.New(rand.NewPCG(3, 3))
	adds := m.notIn(r, format.PendingMax+5, func() uint64 { return lo + r.Uint64N(hi-lo) })
	m.merge(adds, nil)
	for _, key := range m.idx.Keys() {
		if key > m.idx.Keys()[0] && key >= lo && key <= hi {
			continue
		}
		if old, ok := before[key]; ok {
			v, c, err := m.db.Get(format.TableKey(format.SpaceTables, mergeTestTable, key))
			require.NoError(t, err)
			require.Equal(t, old, v, fmt.Sprintf("block %016x outside the merge's range changed", key))
			c.Close()
		}
	}
}

// TestMergeSizesDirectory: a merge whose adds all join pending lists
// builds a directory of the old one's length and capacity (bar a little
// room), not room for a split of every block it touched: the new
// directory is held until the next flush.
func TestMergeSizesDirectory(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	m := newMergeTable(t, fingerprints.Uniform(20000, 7), 256)
	before := m.idx.Len()
	adds := m.notIn(r, before, r.Uint64) // about one a block: every one joins a pending list
	res := m.merge(adds, nil)
	require.Zero(t, res.Written, "no block rewritten")
	require.Equal(t, before, m.idx.Len())
	require.LessOrEqual(t, cap(m.idx.Keys()), before+16)
}
