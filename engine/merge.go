package engine

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/huffman"
)

type mergeResult struct {
	code                    []byte // the table's new code, if it has one
	added, removed, written int
	pended                  int     // fingerprints added to pending lists
	replaced                []*slot // cache slots of blocks rewritten or deleted
	fill                    []filled
}

// filled is a new block's decoded contents, which a flush knows already:
// it goes to the cache once the flush is committed, so that neither
// queries nor the next flush decode the blocks a flush just wrote.
type filled struct {
	slot      *slot
	fps, pend []uint64
}

// group is the part of a flush that falls in one block: block j covers
// (keys[j-1], keys[j]]; values above the last key join the last block.
type group struct {
	j          int // -1: the table is empty
	adds, dels []uint64
	merged     []uint64 // the block's new contents, pending list included
	fresh      []uint64 // adds not stored before
	base       []uint64 // the block without its pending list, if known
	prev       []uint64 // the block's pending list before the flush, if known
	removed    int
	pend       bool // the fresh ones join the block's pending list
}

// mergeTable rewrites the blocks of table t that adds (new permuted
// fingerprints, sorted) and dels (permuted fingerprints that leave, sorted)
// fall in, into b, and updates st's block directory and codes. A new code
// is in the result, for the caller to write.
func (e *DB) mergeTable(b *tableBatches, old, st *state, t int, adds, dels []uint64) (mergeResult, error) {
	var r mergeResult
	keys := old.tables[t].keys
	// adds and dels are sorted: each block's share of them is a run, cut
	// with one binary search per block (the last block also takes what
	// lies above its key; an empty table is one group, j = -1).
	groups := make([]group, 0, min(len(adds)+len(dels), len(keys)+1))
	cut := func(x []uint64, j int) int {
		if j == len(keys)-1 {
			return len(x)
		}
		n, _ := slices.BinarySearch(x, keys[j]+1)
		return n
	}
	if len(keys) == 0 {
		if len(adds) > 0 {
			groups = append(groups, group{j: -1, adds: adds})
		}
	} else {
		for len(adds) > 0 || len(dels) > 0 {
			j := len(keys)
			if len(adds) > 0 {
				j, _ = slices.BinarySearch(keys, adds[0])
			}
			if len(dels) > 0 {
				jd, _ := slices.BinarySearch(keys, dels[0])
				j = min(j, jd)
			}
			j = min(j, len(keys)-1)
			na, nd := cut(adds, j), cut(dels, j)
			groups = append(groups, group{j: j, adds: adds[:na], dels: dels[:nd]})
			adds, dels = adds[na:], dels[nd:]
		}
	}
	if len(groups) == 0 {
		return r, nil
	}
	oldIdx := old.tables[t]
	var hist [huffman.Symbols]uint64
	for i := range groups {
		g := &groups[i]
		if g.j >= 0 && len(g.dels) == 0 && oldIdx.pending(g.j)+len(g.adds) <= pendingMax {
			// Only adds, which the flush made sure are not stored yet, and
			// room for them in the pending list: they join it, and the
			// block is not read (in an index larger than the cache most
			// blocks a flush touches are not cached, and reading one costs
			// far more than writing its pending list).
			// Nor is its pending list: the new ones are appended to it.
			g.pend, g.fresh = true, g.adds
			r.added += len(g.adds)
			g.base, g.prev, _ = e.cache.peek(oldIdx.slots[g.j])
			continue
		}
		var cur []uint64
		if g.j >= 0 {
			var err error
			if g.base, g.prev, err = e.readBlock(old, t, g.j); err != nil {
				return r, err
			}
			if cur, err = mergePending(t, oldIdx.keys[g.j], g.base, g.prev); err != nil {
				return r, err
			}
		}
		g.merged = make([]uint64, 0, len(cur)+len(g.adds))
		// adds and dels are disjoint: a fingerprint leaves only when no
		// document keeps it.
		i, a, d := 0, 0, 0
		for i < len(cur) || a < len(g.adds) {
			var v uint64
			switch {
			case a == len(g.adds) || i < len(cur) && cur[i] < g.adds[a]:
				v = cur[i]
				i++
			case i == len(cur) || g.adds[a] < cur[i]:
				v = g.adds[a]
				a++
				g.fresh = append(g.fresh, v)
			default: // already stored
				v = cur[i]
				i++
				a++
			}
			for d < len(g.dels) && g.dels[d] < v {
				d++
			}
			if d < len(g.dels) && g.dels[d] == v {
				g.removed++
				continue
			}
			g.merged = append(g.merged, v)
		}
		r.added += len(g.fresh)
		r.removed += g.removed
		if g.j >= 0 && g.removed == 0 {
			// Nothing leaves: the block stays, with the fresh fingerprints
			// (if any) in its pending list while it has room.
			if len(g.fresh) == 0 || oldIdx.pending(g.j)+len(g.fresh) <= pendingMax {
				g.pend = true
				continue
			}
		}
		for k := 1; k < len(g.merged); k++ {
			hist[codec.H(g.merged[k-1], g.merged[k])]++
		}
	}
	// The table's code: trained on its first flush, and again when the
	// fingerprints rewritten now would cost 2% less with a code of their own
	// (the table grew denser).
	id := st.curCode[t]
	code := st.codes[t][id]
	if best := huffman.Build(&hist); code == nil || code.Cost(&hist) > best.Cost(&hist)*102/100 && best.Cost(&hist) > 1<<16 {
		id++
		cb, err := best.MarshalBinary()
		if err != nil {
			return r, err
		}
		r.code = cb
		codes := maps.Clone(st.codes[t])
		codes[id] = best
		st.codes[t], st.curCode[t], code = codes, id, best
	}
	// New directory: the old one with each group's block replaced by its
	// new blocks, or given a new pending list.
	// Sized for the old directory and a split per group, so that building
	// it copies the old one once: it has a few hundred thousand entries in
	// a large index, and a flush builds it anew for every table.
	size := len(oldIdx.keys) + len(groups) + 16
	nk := make([]uint64, 0, size)
	ns := make([]uint32, 0, size)
	np := make([]uint16, 0, size)
	nslots := make([]*slot, 0, size)
	next := 0
	var buf, pbuf []byte // the batch copies what it is given
	for i := range groups {
		g := &groups[i]
		if g.j >= 0 {
			nk = append(nk, oldIdx.keys[next:g.j]...)
			ns = append(ns, oldIdx.sizes[next:g.j]...)
			np = appendPending(np, &oldIdx, next, g.j)
			nslots = append(nslots, oldIdx.slots[next:g.j]...)
			next = g.j + 1
		}
		key, had := uint64(0), 0
		if g.j >= 0 {
			key, had = oldIdx.keys[g.j], oldIdx.pending(g.j)
		}
		if g.pend {
			sl := oldIdx.slots[g.j]
			if len(g.fresh) > 0 {
				// g.fresh is sorted, and none of it is stored: a run to
				// append to the list, unread.
				var err error
				if had == 0 {
					pbuf = appendPendingRun(pbuf[:0], g.fresh)
					err = b.pend.Set(tableKey(spacePending, t, key), pbuf, nil)
				} else {
					pbuf = appendPendingRun(append(pbuf[:0], 0), g.fresh)
					err = b.pend.Merge(tableKey(spacePending, t, key), pbuf, nil)
				}
				if err != nil {
					return r, err
				}
				r.replaced = append(r.replaced, sl)
				sl = new(slot)
				if g.base != nil { // cached: so is the new state
					if len(g.prev) != had {
						return r, fmt.Errorf("%w: table %d block %016x: the directory counts %d pending fingerprints, the block has %d", ErrCorrupt, t, key, had, len(g.prev))
					}
					pend := slices.Concat(g.prev, g.fresh)
					slices.Sort(pend)
					r.fill = append(r.fill, filled{sl, g.base, pend})
				}
				had += len(g.fresh)
				r.pended += len(g.fresh)
			}
			nk, ns, np, nslots = append(nk, key), append(ns, oldIdx.sizes[g.j]), append(np, uint16(had)), append(nslots, sl)
			continue
		}
		if g.j >= 0 {
			r.replaced = append(r.replaced, oldIdx.slots[g.j])
			if had > 0 {
				if err := b.pend.Delete(tableKey(spacePending, t, key), nil); err != nil {
					return r, err
				}
			}
		}
		// The old block goes unless a new one has its key: deleted where
		// its key falls among the new ones, to keep the batches in order.
		gone := g.j >= 0
		drop := func(upTo uint64) error {
			if !gone || oldIdx.keys[g.j] > upTo {
				return nil
			}
			gone = false
			if err := b.blocks.Delete(tableKey(spaceTables, t, oldIdx.keys[g.j]), nil); err != nil {
				return err
			}
			return b.dir.Delete(tableKey(spaceBlockDir, t, oldIdx.keys[g.j]), nil)
		}
		if len(g.merged) > 0 {
			bl, err := codec.NewBuilder(code, id, e.block)
			if err != nil {
				return r, err
			}
			from := 0 // g.merged[from:] is the block being built
			emit := func(to int) error {
				var key uint64
				key, buf = bl.Finish(buf[:0])
				if gone && key == oldIdx.keys[g.j] {
					gone = false // rewritten in place
				} else if key > 0 {
					if err := drop(key - 1); err != nil {
						return err
					}
				}
				if err := b.blocks.Set(tableKey(spaceTables, t, key), buf, nil); err != nil {
					return err
				}
				if err := b.dir.Set(tableKey(spaceBlockDir, t, key), dirValue(len(buf)), nil); err != nil {
					return err
				}
				sl := new(slot)
				nk, ns, np, nslots = append(nk, key), append(ns, uint32(len(buf))), append(np, 0), append(nslots, sl)
				r.fill = append(r.fill, filled{sl, g.merged[from:to:to], nil})
				from = to
				r.written++
				return nil
			}
			for i, v := range g.merged {
				ok, err := bl.Add(v)
				if err != nil {
					return r, fmt.Errorf("engine: table %d: %w", t, err)
				}
				if !ok {
					if err := emit(i); err != nil {
						return r, err
					}
					if _, err := bl.Add(v); err != nil {
						return r, err
					}
				}
			}
			if err := emit(len(g.merged)); err != nil {
				return r, err
			}
		}
		if err := drop(math.MaxUint64); err != nil {
			return r, err
		}
	}
	nk = append(nk, oldIdx.keys[next:]...)
	ns = append(ns, oldIdx.sizes[next:]...)
	np = appendPending(np, &oldIdx, next, len(oldIdx.keys))
	nslots = append(nslots, oldIdx.slots[next:]...)
	if !slices.ContainsFunc(np, func(n uint16) bool { return n > 0 }) {
		np = nil
	}
	st.tables[t] = tableIndex{keys: nk, sizes: ns, pend: np, slots: nslots}
	st.tables[t].index()
	return r, nil
}

// appendPending appends the pending counts of blocks from..to-1 of ti.
func appendPending(np []uint16, ti *tableIndex, from, to int) []uint16 {
	if ti.pend == nil {
		return append(np, make([]uint16, to-from)...)
	}
	return append(np, ti.pend[from:to]...)
}
