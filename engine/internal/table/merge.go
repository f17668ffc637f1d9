package table

import (
	"fmt"
	"maps"
	"math"
	"slices"

	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/huffman"
)

// A flush merges, in each table, the fingerprints it adds and those that
// leave into the blocks they fall in: most join a block's pending list
// (package format) without the block being read; a block whose list is full,
// or that loses a fingerprint, is rewritten.

// Batches are a table's writes in a flush, a Pebble batch per keyspace
// (format.SpaceTables, SpaceBlockDir, SpacePending).
type Batches struct{ Blocks, Dir, Pend *store.Batch }

// Close closes the batches.
func (b Batches) Close() {
	for _, x := range []*store.Batch{b.Blocks, b.Dir, b.Pend} {
		if x != nil {
			x.Close()
		}
	}
}

// Merge is what a flush's merge into one table works with.
type Merge struct {
	Table     int
	Old       *Index // the table before the flush
	New       *Index // the table after it: its codes on entry, all of it on return
	BlockSize int
	Cache     *cache.Cache
	// Read returns block j of Old decoded, and its pending list, from the
	// cache or the store.
	Read    func(j int) (fps, pend []uint64, err error)
	Batches *Batches
}

// MergeResult is what a merge did, and what its caller does once the
// flush is committed.
type MergeResult struct {
	Code                    []byte // the table's new code, if it has one, for the caller to store
	Added, Removed, Written int
	Pended                  int           // fingerprints added to pending lists
	Replaced                []*cache.Slot // cache slots of blocks rewritten or deleted
	Fill                    []Filled
}

// Filled is a new block's decoded contents, which a flush knows already:
// it goes to the cache once the flush is committed, so that neither
// queries nor the next flush decode the blocks a flush just wrote. It is
// packed as the block is written, so that a flush holds its merged
// fingerprints for one group at a time.
type Filled struct {
	Slot   *cache.Slot
	Packed cache.Packed
	Pend   []uint64
}

// group is the part of a flush that falls in one block: block j covers
// (keys[j-1], keys[j]]; values above the last key join the last block.
type group struct {
	j          int // -1: the table is empty
	adds, dels []uint64
	merged     []uint64     // the block's new contents, pending list included
	fresh      []uint64     // adds not stored before
	cached     cache.Packed // the block, if the pending list grows and it is cached
	prev       []uint64     // the block's pending list before the flush, if known
	removed    int
	pend       bool // the fresh ones join the block's pending list
}

// merger merges a flush's changes into one table.
type merger struct {
	in     Merge
	t      int
	oldIdx *Index // the table before the flush
	nt     *Index // the table after it, in the new state
	b      *Batches
	w      Writer
	r      MergeResult
}

// Run rewrites the blocks of the table that adds (new permuted
// fingerprints, sorted) and dels (permuted fingerprints that leave, sorted)
// fall in, into the batches, and fills New's block directory and codes. A
// new code is in the result, for the caller to write.
func (in Merge) Run(adds, dels []uint64) (MergeResult, error) {
	m := &merger{in: in, t: in.Table, oldIdx: in.Old, nt: in.New, b: in.Batches}
	groups := m.groups(adds, dels)
	if len(groups) == 0 {
		return m.r, nil
	}
	var hist [huffman.Symbols]uint64
	for i := range groups {
		if err := m.plan(&groups[i], &hist); err != nil {
			return m.r, err
		}
	}
	code, id, err := m.retrain(&hist)
	if err != nil {
		return m.r, err
	}
	// New directory: the old one with each group's block replaced by its
	// new blocks, or given a new pending list. Sized for the old directory
	// and a split per block rewritten, so that building it copies the old
	// one once: it has a few hundred thousand entries in a large index, and
	// a flush builds it anew for every table. A group whose adds join the
	// pending list keeps its one block: in a large index that is most of
	// them, and a split for each would leave the directory held at nearly
	// twice its length until the next flush.
	size := len(m.oldIdx.keys) + 16
	for i := range groups {
		if !groups[i].pend {
			size++
		}
	}
	*m.nt = Sized(m.nt.codes, m.nt.code, size)
	m.w = Writer{Table: m.t, Blocks: batchSetter{m.b.Blocks}, Dir: batchSetter{m.b.Dir}, Index: m.nt}
	next := 0
	var pbuf []byte
	for i := range groups {
		g := &groups[i]
		if g.j >= 0 {
			m.nt.AppendRange(m.oldIdx, next, g.j)
			next = g.j + 1
		}
		if g.pend {
			if pbuf, err = m.appendPending(g, pbuf); err != nil {
				return m.r, err
			}
			continue
		}
		if err := m.rewrite(g, code, id); err != nil {
			return m.r, err
		}
		g.merged = nil // written, and packed for the cache
	}
	m.nt.AppendRange(m.oldIdx, next, len(m.oldIdx.keys))
	if !slices.ContainsFunc(m.nt.pend, func(n uint16) bool { return n > 0 }) {
		m.nt.pend = nil
	}
	m.nt.Build()
	return m.r, nil
}

// groups cuts adds and dels (sorted) into each block's share, a run of
// each, with one binary search per block (the last block also takes what
// lies above its key; an empty table is one group, j = -1).
func (m *merger) groups(adds, dels []uint64) []group {
	keys := m.oldIdx.keys
	if len(keys) == 0 {
		if len(adds) > 0 {
			return []group{{j: -1, adds: adds}}
		}
		return nil
	}
	groups := make([]group, 0, min(len(adds)+len(dels), len(keys)+1))
	cut := func(x []uint64, j int) int {
		if j == len(keys)-1 {
			return len(x)
		}
		n, _ := slices.BinarySearch(x, keys[j]+1)
		return n
	}
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
	return groups
}

// plan decides what becomes of g's block: its fresh fingerprints join its
// pending list (g.pend), or it is rewritten as g.merged, whose h values
// are counted in hist for the code.
func (m *merger) plan(g *group, hist *[huffman.Symbols]uint64) error {
	oldIdx := m.oldIdx
	if g.j >= 0 && len(g.dels) == 0 && oldIdx.Pending(g.j)+len(g.adds) <= format.PendingMax {
		// Only adds, which the flush made sure are not stored yet, and
		// room for them in the pending list: they join it, and the block
		// is not read (in an index larger than the cache most blocks a
		// flush touches are not cached, and reading one costs far more
		// than writing its pending list). Nor is its pending list: the
		// new ones are appended to it.
		g.pend, g.fresh = true, g.adds
		m.r.Added += len(g.adds)
		if b := m.in.Cache.Load(oldIdx.Slot(g.j)); b != nil {
			g.cached, g.prev = b.Packed, b.Pending()
		}
		return nil
	}
	var cur []uint64
	if g.j >= 0 {
		base, prev, err := m.in.Read(g.j)
		if err != nil {
			return err
		}
		g.prev = prev
		if cur, err = MergePending(m.t, oldIdx.keys[g.j], base, prev); err != nil {
			return err
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
	m.r.Added += len(g.fresh)
	m.r.Removed += g.removed
	if g.j >= 0 && g.removed == 0 {
		// Nothing leaves: the block stays, with the fresh fingerprints (if
		// any) in its pending list while it has room.
		if len(g.fresh) == 0 || oldIdx.Pending(g.j)+len(g.fresh) <= format.PendingMax {
			// Every group is planned before any is written: what a
			// group keeps till then is what the flush holds.
			g.pend, g.merged = true, nil
			return nil
		}
	}
	for k := 1; k < len(g.merged); k++ {
		hist[codec.H(g.merged[k-1], g.merged[k])]++
	}
	return nil
}

// retrain returns the code the rewritten blocks use, and its id: the
// table's, or a new one (codec.Retrain) that the new state takes and the
// result carries for the caller to store.
func (m *merger) retrain(hist *[huffman.Symbols]uint64) (*huffman.Code, uint32, error) {
	id := m.nt.code
	code, trained := codec.Retrain(m.nt.codes[id], hist)
	if !trained {
		return code, id, nil
	}
	id++
	cb, err := code.MarshalBinary()
	if err != nil {
		return nil, 0, err
	}
	m.r.Code = cb
	codes := maps.Clone(m.nt.codes)
	codes[id] = code
	m.nt.codes, m.nt.code = codes, id
	return code, id, nil
}

// appendPending appends g's fresh fingerprints to its block's pending
// list, unread, and keeps the block in the new directory. pbuf is a
// buffer to reuse, returned.
func (m *merger) appendPending(g *group, pbuf []byte) ([]byte, error) {
	t, oldIdx := m.t, m.oldIdx
	key, had := oldIdx.keys[g.j], oldIdx.Pending(g.j)
	sl := oldIdx.Slot(g.j)
	if len(g.fresh) > 0 {
		// g.fresh is sorted, and none of it is stored: a run to append.
		var err error
		if had == 0 {
			pbuf = format.AppendPendingRun(pbuf[:0], g.fresh)
			err = m.b.Pend.Set(format.TableKey(format.SpacePending, t, key), pbuf)
		} else {
			pbuf = format.AppendPendingRun(append(pbuf[:0], 0), g.fresh)
			err = m.b.Pend.Merge(format.TableKey(format.SpacePending, t, key), pbuf)
		}
		if err != nil {
			return pbuf, err
		}
		m.r.Replaced = append(m.r.Replaced, sl)
		sl = new(cache.Slot)
		if g.cached.Len() > 0 { // cached: so is the new state
			if len(g.prev) != had {
				return pbuf, format.CorruptBlock(t, key, "the directory counts %d pending fingerprints, the block has %d", had, len(g.prev))
			}
			pend := slices.Concat(g.prev, g.fresh)
			slices.Sort(pend)
			m.r.Fill = append(m.r.Fill, Filled{Slot: sl, Packed: g.cached, Pend: pend})
		}
		had += len(g.fresh)
		m.r.Pended += len(g.fresh)
	}
	m.nt.AppendBlock(key, oldIdx.dir[g.j], uint16(had), sl)
	return pbuf, nil
}

// rewrite writes g.merged as new blocks in place of g's block (deleting
// it and its pending list, unless a new block has its key).
func (m *merger) rewrite(g *group, code *huffman.Code, id uint32) error {
	t, oldIdx := m.t, m.oldIdx
	if g.j >= 0 {
		m.r.Replaced = append(m.r.Replaced, oldIdx.Slot(g.j))
		if oldIdx.Pending(g.j) > 0 {
			if err := m.b.Pend.Delete(format.TableKey(format.SpacePending, t, oldIdx.keys[g.j])); err != nil {
				return err
			}
		}
	}
	// The old block goes unless a new one has its key: deleted where its
	// key falls among the new ones, to keep the batches in order.
	gone := g.j >= 0
	drop := func(upTo uint64) error {
		if !gone || oldIdx.keys[g.j] > upTo {
			return nil
		}
		gone = false
		if err := m.b.Blocks.Delete(format.TableKey(format.SpaceTables, t, oldIdx.keys[g.j])); err != nil {
			return err
		}
		return m.b.Dir.Delete(format.TableKey(format.SpaceBlockDir, t, oldIdx.keys[g.j]))
	}
	if len(g.merged) > 0 {
		bl, err := codec.NewBuilder(code, id, m.in.BlockSize)
		if err != nil {
			return err
		}
		from := 0 // g.merged[from:] is the block being built
		var buf []byte
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
			sl := new(cache.Slot)
			if err := m.w.Block(key, buf, sl); err != nil {
				return err
			}
			m.r.Fill = append(m.r.Fill, Filled{Slot: sl, Packed: cache.Pack(g.merged[from:to])})
			from = to
			m.r.Written++
			return nil
		}
		for i, v := range g.merged {
			ok, err := bl.Add(v)
			if err != nil {
				return fmt.Errorf("engine: table %d: %w", t, err)
			}
			if !ok {
				if err := emit(i); err != nil {
					return err
				}
				if _, err := bl.Add(v); err != nil {
					return err
				}
			}
		}
		if err := emit(len(g.merged)); err != nil {
			return err
		}
	}
	return drop(math.MaxUint64)
}

// batchSetter sets keys in a Pebble batch.
type batchSetter struct{ b *store.Batch }

func (s batchSetter) Set(key, value []byte) error { return s.b.Set(key, value) }
