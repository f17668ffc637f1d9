package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/simhashdb/simhashdb/engine/internal/radix"
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

func (b tableBatches) dirOf() *pebble.Batch { return b.dir }

func (b tableBatches) pendOf() *pebble.Batch { return b.pend }

func (b tableBatches) close() {
	for _, x := range []*pebble.Batch{b.blocks, b.dir, b.pend} {
		if x != nil {
			x.Close()
		}
	}
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
