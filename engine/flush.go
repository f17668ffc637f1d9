package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"runtime"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/engine/internal/radix"
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
		"blocks_replaced", fs.replaced, "pending_added", fs.pended, "elapsed", time.Since(start))
	return nil
}

type flushStats struct{ written, replaced, pended int }

// lastDocID returns the largest document id r holds; stored is false when
// it holds none.
func lastDocID(r reader) (id uint64, stored bool, err error) {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: []byte{spaceDocs}, UpperBound: []byte{spaceDocs + 1}})
	if err != nil {
		return 0, false, err
	}
	if it.Last() {
		if k := it.Key(); len(k) == 9 {
			id, stored = binary.BigEndian.Uint64(k[1:]), true
		} else {
			err = fmt.Errorf("%w: document key %x", ErrCorrupt, k)
		}
	}
	if err == nil {
		err = it.Error()
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return id, stored, err
}

// heldBy reports whether the postings that it iterates hold fingerprint fp
// for an id that counts.
func (e *DB) heldBy(it *pebble.Iterator, fp uint64, counts func(id uint64) bool) bool {
	for e.seekPostings(it, fp); it.Valid(); it.Next() {
		k := it.Key()
		if len(k) != 17 || binary.BigEndian.Uint64(k[1:]) != fp {
			return false
		}
		if counts(binary.BigEndian.Uint64(k[9:])) {
			return true
		}
	}
	return false
}

// flushMemtable commits m to Pebble in one batch and installs the new state.
func (e *DB) flushMemtable(m *memtable, walFrom uint64) (flushStats, error) {
	var fs flushStats
	old := e.st // only flushes replace it, and flushMu is held
	// The flush's writes, one batch per keyspace (the tables' per table
	// too), joined in key order into one batch to commit: Pebble sorts a
	// large batch's keys when it commits it, and keys in order take that
	// sort one pass. None is indexed: nothing reads them back.
	docsB := e.pdb.NewBatch()
	defer docsB.Close()
	docs := old.docs
	// Documents and postings; fingerprints that may have lost their last
	// document are checked once the batch holds every change.
	orphans := map[uint64]bool{}
	ids := make([]uint64, 0, len(m.docs))
	for id := range m.docs {
		ids = append(ids, id)
	}
	radix.Sort(ids)
	// The postings this flush writes: the cache's units take them.
	changes := make([]postingChange, 0, len(ids))
	// An id above every stored one is new: no look-up, which a caller that
	// numbers its documents as it goes (NextID) would otherwise pay for
	// every insert.
	top, stored, err := lastDocID(old.snap)
	if err != nil {
		return fs, err
	}
	for _, id := range ids {
		d := m.docs[id]
		var v []byte
		var c io.Closer
		err := pebble.ErrNotFound
		if stored && id <= top {
			v, c, err = e.pdb.Get(docKey(id))
		}
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
			changes = append(changes, postingChange{fp: ofp, id: id})
			if !d.live || d.fp != ofp {
				orphans[ofp] = true
			}
			docs--
		}
		if d.live {
			changes = append(changes, postingChange{fp: d.fp, id: id, name: d.name, add: true})
			if err := docsB.Set(docKey(id), docValue(d.fp, d.name), nil); err != nil {
				return fs, err
			}
			docs++
		} else if err := docsB.Delete(docKey(id), nil); err != nil {
			return fs, err
		}
	}
	// The postings in key order: changes are in id order, removal before
	// addition, and the sort by fingerprint is stable.
	sortChangesByFP(changes)
	postB := e.pdb.NewBatch()
	defer postB.Close()
	for _, c := range changes {
		var err error
		if c.add {
			err = postB.Set(postingKey(c.fp, c.id), []byte(c.name), nil)
		} else {
			err = postB.Delete(postingKey(c.fp, c.id), nil)
		}
		if err != nil {
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
	if len(adds) > 0 || len(orphans) > 0 {
		it, err := old.snap.NewIter(&pebble.IterOptions{LowerBound: []byte{spacePostings}, UpperBound: []byte{spacePostings + 1}})
		if err != nil {
			return fs, err
		}
		// Fingerprints already in the tables (some stored document has
		// them) change nothing there; mergeTable takes the rest as new, so
		// that it can put them in pending lists without reading their
		// blocks. Each check is a seek, most of them cache misses in a
		// large index: the cores take a share each, in order.
		radix.Sort(adds)
		// Most of these fingerprints are new, and most postings are in
		// the last level, where Pebble reads no bloom filter unless told:
		// they are large, and most look-ups there find their key. Here
		// most do not, and the filter saves a data block read from disk
		// per fingerprint, but only while the filters (1.25 bytes per
		// posting) stay in the cache; otherwise they would be read again
		// and again.
		useL6 := e.prefixSeek && old.docs*10/8 <= e.pebbleCache/2
		parts := min(runtime.GOMAXPROCS(0), max(len(adds)/4096, 1))
		fresh, err := parallel(context.Background(), parts, func(part int) ([]uint64, error) {
			share := adds[part*len(adds)/parts : (part+1)*len(adds)/parts]
			it, err := old.snap.NewIter(&pebble.IterOptions{LowerBound: []byte{spacePostings}, UpperBound: []byte{spacePostings + 1}, UseL6Filters: useL6})
			if err != nil {
				return nil, err
			}
			var out []uint64
			for _, fp := range share {
				if !e.heldBy(it, fp, func(uint64) bool { return true }) {
					out = append(out, fp)
				}
			}
			return out, errors.Join(it.Error(), it.Close())
		})
		if err != nil {
			return fs, errors.Join(err, it.Close())
		}
		adds = slices.Concat(fresh...)
		// An orphan stays if a document of this flush has it, or a stored
		// one that this flush does not rewrite: every id it writes is in
		// m.docs, and its new postings are in m.byFP.
		for fp := range orphans {
			if len(m.byFP[fp]) == 0 && !e.heldBy(it, fp, func(id uint64) bool { _, ok := m.docs[id]; return !ok }) {
				dels = append(dels, fp)
			}
		}
		if err := errors.Join(it.Error(), it.Close()); err != nil {
			return fs, err
		}
	}
	st := &state{tables: slices.Clone(old.tables), codes: slices.Clone(old.codes), curCode: slices.Clone(old.curCode), docs: docs, fps: old.fps, walFrom: walFrom}
	var dropped []*slot
	var carry []carried
	st.units, dropped, carry = old.units.next(docs, changes)
	var fills []filled
	// The tables are independent: the cores merge a share of them each,
	// into batches of their own.
	batches := make([]tableBatches, len(e.design.Tables))
	defer func() {
		for _, tb := range batches {
			tb.close()
		}
	}()
	outs, err := parallel(context.Background(), len(e.design.Tables), func(t int) ([]mergeResult, error) {
		tb := &e.design.Tables[t]
		perm := make([]uint64, 0, len(adds))
		for _, fp := range adds {
			perm = append(perm, tb.Permute(fp))
		}
		radix.Sort(perm)
		pdels := make([]uint64, 0, len(dels))
		for _, fp := range dels {
			pdels = append(pdels, tb.Permute(fp))
		}
		radix.Sort(pdels)
		batches[t] = tableBatches{e.pdb.NewBatch(), e.pdb.NewBatch(), e.pdb.NewBatch()}
		r, err := e.mergeTable(&batches[t], old, st, t, perm, pdels)
		return []mergeResult{r}, err
	})
	if err != nil {
		return fs, err
	}
	metaB := e.pdb.NewBatch()
	defer metaB.Close()
	for t, o := range outs {
		r := o[0]
		if r.code != nil {
			if err := metaB.Set(metaCodeKey(t, st.curCode[t]), r.code, nil); err != nil {
				return fs, err
			}
		}
		dropped = append(dropped, r.replaced...)
		fills = append(fills, r.fill...)
		fs.written += r.written
		fs.pended += r.pended
		fs.replaced += len(r.replaced)
		if t == 0 {
			st.fps += int64(r.added - r.removed)
		}
	}
	// An older index may get pending lists of several runs now: mark it
	// with this version.
	if err := metaB.Set(metaFormat, binary.BigEndian.AppendUint32(nil, formatVersion), nil); err != nil {
		return fs, err
	}
	if err := metaB.Set(metaCounts, binary.AppendUvarint(binary.AppendUvarint(nil, uint64(st.docs)), uint64(st.fps)), nil); err != nil {
		return fs, err
	}
	if err := metaB.Set(metaWALFrom, binary.AppendUvarint(nil, walFrom), nil); err != nil {
		return fs, err
	}
	// Keyspace order: meta, documents, postings, then blocks, directory
	// entries and pending lists, each in table order.
	parts := []*pebble.Batch{metaB, docsB, postB}
	for _, space := range []func(tableBatches) *pebble.Batch{tableBatches.blocksOf, tableBatches.dirOf, tableBatches.pendOf} {
		for _, tb := range batches {
			parts = append(parts, space(tb))
		}
	}
	size := 0
	for _, p := range parts {
		size += p.Len()
	}
	// Sized once: growing a batch of a few hundred megabytes copies it
	// again at every doubling.
	b := e.pdb.NewBatchWithSize(size)
	defer b.Close()
	for _, p := range parts {
		if err := b.Apply(p, nil); err != nil {
			return fs, err
		}
	}
	if flushBatchHook != nil {
		flushBatchHook(b)
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
	budget := e.memtableBudget()
	e.cond.Broadcast()
	e.mu.Unlock()
	e.fitWriteRoom(budget)
	// Outside the lock: a query may have cached a new block first, and put
	// then keeps its copy.
	for _, f := range fills {
		e.cache.put(f.slot, f.fps, f.pend)
	}
	for _, c := range carry {
		e.cache.putBlock(c.slot, c.b)
	}
	return fs, old.close()
}

// tableBatches are a table's writes in a flush, a batch per keyspace.
type tableBatches struct{ blocks, dir, pend *pebble.Batch }

func (b tableBatches) blocksOf() *pebble.Batch { return b.blocks }
func (b tableBatches) dirOf() *pebble.Batch    { return b.dir }
func (b tableBatches) pendOf() *pebble.Batch   { return b.pend }

func (b tableBatches) close() {
	for _, x := range []*pebble.Batch{b.blocks, b.dir, b.pend} {
		if x != nil {
			x.Close()
		}
	}
}

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

// pendingMax is the most pending fingerprints a block keeps beside it
// before a flush merges them in. A flush that adds a few fingerprints to a
// block appends them to its pending list (a few bytes each, without reading
// the list or the block) instead of rewriting the whole block; once a block
// has gathered pendingMax, it is rewritten. That divides the bytes a large
// index writes per added fingerprint by about pendingMax in each table, for
// a counter per block in memory, a second read when a block is not cached
// and a longer list for a query to search.
const pendingMax = 96

// pendingDamaged is the pending count open gives a list it cannot count:
// more than a list holds, so that reading it fails and a flush rewrites,
// rather than appends to, its block.
const pendingDamaged = pendingMax + 1

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

// sortChangesByFP sorts ch by fingerprint, stably: changes in id order,
// removal before addition, end up in posting key order.
func sortChangesByFP(ch []postingChange) {
	keys := make([]uint64, len(ch))
	order := make([]uint32, len(ch))
	for i, c := range ch {
		keys[i], order[i] = c.fp, uint32(i)
	}
	radix.SortPairs(keys, order)
	sorted := make([]postingChange, len(ch))
	for i, o := range order {
		sorted[i] = ch[o]
	}
	copy(ch, sorted)
}

// flushBatchHook, if set (by tests), sees each flush's batch before it is
// committed.
var flushBatchHook func(*pebble.Batch)
