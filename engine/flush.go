package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/huffman"
)

// Flush merges the memtable into the tables and makes it durable in Pebble,
// then drops the log segments it covers.
func (e *DB) Flush(ctx context.Context) error {
	if e.opts.ReadOnly {
		return ErrReadOnly
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return e.flush()
}

func (e *DB) flush() error {
	e.flushMu.Lock()
	defer e.flushMu.Unlock()
	e.mu.RLock()
	imm, seg, closed := e.imm, e.immSeg, e.closed
	e.mu.RUnlock()
	if closed {
		return ErrClosed
	}
	if imm == nil {
		// Freeze: no appends (commitMu), every appended record published,
		// then a new log segment for the new memtable.
		e.commitMu.Lock()
		e.mu.Lock()
		for e.published != e.appended {
			e.cond.Wait()
		}
		empty := e.mem.empty()
		e.mu.Unlock()
		if empty {
			e.commitMu.Unlock()
			return nil
		}
		var err error
		if seg, err = e.wal.Rotate(); err != nil {
			e.commitMu.Unlock()
			return fmt.Errorf("engine: %w", err)
		}
		e.mu.Lock()
		imm, e.imm, e.immSeg = e.mem, e.mem, seg
		e.mem = newMemtable(e.design)
		e.mu.Unlock()
		e.commitMu.Unlock()
	}
	start := time.Now()
	fs, err := e.flushMemtable(imm, seg)
	if err != nil {
		return err
	}
	if err := e.wal.RemoveBefore(seg); err != nil {
		return fmt.Errorf("engine: removing flushed log segments: %w", err)
	}
	e.log.Debug("simhashdb: flushed", "documents", len(imm.docs), "blocks_written", fs.written,
		"blocks_replaced", fs.replaced, "elapsed", time.Since(start))
	return nil
}

type flushStats struct{ written, replaced int }

// flushMemtable commits m to Pebble in one batch and installs the new state.
func (e *DB) flushMemtable(m *memtable, walFrom uint64) (flushStats, error) {
	var fs flushStats
	old := e.st // only flushes replace it, and flushMu is held
	b := e.pdb.NewIndexedBatch()
	defer b.Close()
	docs := old.docs
	// Documents and postings; fingerprints that may have lost their last
	// document are checked once the batch holds every change.
	orphans := map[uint64]bool{}
	ids := slices.Sorted(maps.Keys(m.docs))
	for _, id := range ids {
		d := m.docs[id]
		v, c, err := e.pdb.Get(docKey(id))
		switch {
		case errors.Is(err, pebble.ErrNotFound):
		case err != nil:
			return fs, err
		default:
			if len(v) < 8 {
				c.Close()
				return fs, fmt.Errorf("%w: document %d: value of %d bytes", ErrCorrupt, id, len(v))
			}
			ofp := binary.BigEndian.Uint64(v)
			c.Close()
			if err := b.Delete(postingKey(ofp, id), nil); err != nil {
				return fs, err
			}
			if !d.live || d.fp != ofp {
				orphans[ofp] = true
			}
			docs--
		}
		if d.live {
			if err := b.Set(docKey(id), docValue(d.fp, d.name), nil); err != nil {
				return fs, err
			}
			if err := b.Set(postingKey(d.fp, id), []byte(d.name), nil); err != nil {
				return fs, err
			}
			docs++
		} else if err := b.Delete(docKey(id), nil); err != nil {
			return fs, err
		}
	}
	var adds, dels []uint64
	for fp, ids := range m.byFP {
		if len(ids) > 0 {
			adds = append(adds, fp)
		} else {
			orphans[fp] = true // indexed here, all its ids gone: maybe stored before
		}
	}
	if len(orphans) > 0 {
		it, err := b.NewIter(&pebble.IterOptions{LowerBound: []byte{spacePostings}, UpperBound: []byte{spacePostings + 1}})
		if err != nil {
			return fs, err
		}
		for fp := range orphans {
			p := postingPrefix(fp)
			if !it.SeekGE(p) || len(it.Key()) != 17 || binary.BigEndian.Uint64(it.Key()[1:]) != fp {
				dels = append(dels, fp)
			}
		}
		if err := it.Close(); err != nil {
			return fs, err
		}
	}
	st := &state{tables: slices.Clone(old.tables), codes: slices.Clone(old.codes), curCode: slices.Clone(old.curCode), docs: docs, fps: old.fps, walFrom: walFrom}
	var dropped []*slot
	perm := make([]uint64, 0, max(len(adds), len(dels)))
	var pdels []uint64
	for t := range e.design.Tables {
		tb := &e.design.Tables[t]
		perm = perm[:0]
		for _, fp := range adds {
			perm = append(perm, tb.Permute(fp))
		}
		slices.Sort(perm)
		pdels = pdels[:0]
		for _, fp := range dels {
			pdels = append(pdels, tb.Permute(fp))
		}
		slices.Sort(pdels)
		r, err := e.mergeTable(b, old, st, t, perm, pdels)
		if err != nil {
			return fs, err
		}
		dropped = append(dropped, r.replaced...)
		fs.written += r.written
		fs.replaced += len(r.replaced)
		if t == 0 {
			st.fps += int64(r.added - r.removed)
		}
	}
	if err := b.Set(metaCounts, binary.AppendUvarint(binary.AppendUvarint(nil, uint64(st.docs)), uint64(st.fps)), nil); err != nil {
		return fs, err
	}
	if err := b.Set(metaWALFrom, binary.AppendUvarint(nil, walFrom), nil); err != nil {
		return fs, err
	}
	if err := b.Commit(pebble.Sync); err != nil {
		return fs, fmt.Errorf("engine: committing a flush: %w", err)
	}
	st.snap, st.iters = e.pdb.NewSnapshot(), make(chan *pebble.Iterator, 8)
	e.mu.Lock()
	e.st = st
	for _, s := range dropped {
		e.cache.drop(s)
	}
	e.imm = nil
	e.cond.Broadcast()
	e.mu.Unlock()
	return fs, old.close()
}

type mergeResult struct {
	added, removed, written int
	replaced                []*slot // cache slots of blocks rewritten or deleted
}

// group is the part of a flush that falls in one block: block j covers
// (keys[j-1], keys[j]]; values above the last key join the last block.
type group struct {
	j          int // -1: the table is empty
	adds, dels []uint64
	merged     []uint64
}

// mergeTable rewrites the blocks of table t that adds (new permuted
// fingerprints, sorted) and dels (permuted fingerprints that leave, sorted)
// fall in, into b, and updates st's block directory and codes.
func (e *DB) mergeTable(b *pebble.Batch, old, st *state, t int, adds, dels []uint64) (mergeResult, error) {
	var r mergeResult
	keys := old.tables[t].keys
	blockOf := func(v uint64) int {
		j, _ := slices.BinarySearch(keys, v)
		return min(j, len(keys)-1)
	}
	var groups []*group
	byJ := map[int]*group{}
	get := func(j int) *group {
		g := byJ[j]
		if g == nil {
			g = &group{j: j}
			byJ[j] = g
			groups = append(groups, g)
		}
		return g
	}
	for _, v := range adds {
		g := get(blockOf(v))
		g.adds = append(g.adds, v)
	}
	for _, v := range dels {
		if j := blockOf(v); j >= 0 {
			g := get(j)
			g.dels = append(g.dels, v)
		}
	}
	if len(groups) == 0 {
		return r, nil
	}
	slices.SortFunc(groups, func(a, b *group) int { return a.j - b.j })
	var hist [huffman.Symbols]uint64
	for _, g := range groups {
		var cur []uint64
		if g.j >= 0 {
			var err error
			if cur, err = e.readBlock(old, t, g.j); err != nil {
				return r, err
			}
			r.replaced = append(r.replaced, old.tables[t].slots[g.j])
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
				r.added++
			default: // already stored
				v = cur[i]
				i++
				a++
			}
			for d < len(g.dels) && g.dels[d] < v {
				d++
			}
			if d < len(g.dels) && g.dels[d] == v {
				r.removed++
				continue
			}
			g.merged = append(g.merged, v)
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
		if err := b.Set(metaCodeKey(t, id), cb, nil); err != nil {
			return r, err
		}
		codes := maps.Clone(st.codes[t])
		codes[id] = best
		st.codes[t], st.curCode[t], code = codes, id, best
	}
	// New directory: the old one with each group's block replaced by its
	// new blocks.
	var nk []uint64
	var ns []uint32
	var nslots []*slot
	oldIdx := old.tables[t]
	next := 0
	var buf []byte
	for _, g := range groups {
		if g.j >= 0 {
			nk = append(nk, oldIdx.keys[next:g.j]...)
			ns = append(ns, oldIdx.sizes[next:g.j]...)
			nslots = append(nslots, oldIdx.slots[next:g.j]...)
			next = g.j + 1
		}
		rewritten := false
		if len(g.merged) > 0 {
			bl, err := codec.NewBuilder(code, id, e.block)
			if err != nil {
				return r, err
			}
			emit := func() error {
				var key uint64
				key, buf = bl.Finish(buf[:0])
				if g.j >= 0 && key == oldIdx.keys[g.j] {
					rewritten = true
				}
				if err := b.Set(tableKey(spaceTables, t, key), buf, nil); err != nil {
					return err
				}
				if err := b.Set(tableKey(spaceBlockDir, t, key), binary.AppendUvarint(nil, uint64(len(buf))), nil); err != nil {
					return err
				}
				nk, ns, nslots = append(nk, key), append(ns, uint32(len(buf))), append(nslots, new(slot))
				r.written++
				return nil
			}
			for _, v := range g.merged {
				ok, err := bl.Add(v)
				if err != nil {
					return r, fmt.Errorf("engine: table %d: %w", t, err)
				}
				if !ok {
					if err := emit(); err != nil {
						return r, err
					}
					if _, err := bl.Add(v); err != nil {
						return r, err
					}
				}
			}
			if err := emit(); err != nil {
				return r, err
			}
		}
		if g.j >= 0 && !rewritten {
			if err := b.Delete(tableKey(spaceTables, t, oldIdx.keys[g.j]), nil); err != nil {
				return r, err
			}
			if err := b.Delete(tableKey(spaceBlockDir, t, oldIdx.keys[g.j]), nil); err != nil {
				return r, err
			}
		}
	}
	nk = append(nk, oldIdx.keys[next:]...)
	ns = append(ns, oldIdx.sizes[next:]...)
	nslots = append(nslots, oldIdx.slots[next:]...)
	st.tables[t] = tableIndex{keys: nk, sizes: ns, slots: nslots}
	st.tables[t].index()
	return r, nil
}
