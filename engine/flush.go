package engine

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"time"

	"github.com/cockroachdb/pebble/v2"
	"github.com/simhashdb/simhashdb/engine/internal/radix"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/wal"
)

// Flush merges the memtable into the tables and makes it durable in Pebble,
// then drops the log segments it covers.
func (e *DB) Flush(ctx context.Context) (err error) {
	defer func() { err = storeErr(err) }()
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
	list, seg, err := e.sealForFlush()
	if err != nil || len(list) == 0 {
		return err
	}
	start := time.Now()
	var fs flushStats
	docs := 0
	// Oldest first. Each flush but the last keeps the log position the
	// tables had: a crash between them replays writes that the tables
	// hold already, which gives the same documents again.
	for i := len(list) - 1; i >= 0; i-- {
		from := e.st.walFrom
		if i == 0 {
			from = wal.Position{Segment: seg}
		}
		s, err := e.flushMemtable(list[i], from, true)
		if err != nil {
			return err
		}
		fs.add(s)
		docs += len(list[i].docs)
	}
	e.mu.Lock()
	if errors.Is(e.bgErr, ErrDiskFull) {
		e.bgErr = nil // flushes work again
		e.log.Info("simhashdb: flushed after a full disk")
	}
	e.cond.Broadcast()
	e.mu.Unlock()
	if err := e.currentLog().RemoveBefore(seg); err != nil {
		return diskErr("removing flushed log segments", err)
	}
	e.log.Debug("simhashdb: flushed", "documents", docs, "memtables", len(list), "blocks_written", fs.written,
		"blocks_replaced", fs.replaced, "pending_added", fs.pended, "elapsed", time.Since(start))
	return nil
}

// sealForFlush freezes the live memtable and returns every frozen one,
// newest first, with the log segment that starts after their records. A
// new segment is started unless one already follows them all (a flush
// that failed left them so): no appends meanwhile (commitMu), every
// appended record published first.
func (e *DB) sealForFlush() ([]*memtable, uint64, error) {
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	e.mu.Lock()
	for e.published != e.appended {
		e.cond.Wait()
	}
	closed, empty, sealed, frozen := e.closed, e.mem.empty(), e.sealed, len(e.frozen)
	if !closed && empty && sealed {
		defer e.mu.Unlock()
		return e.frozen, e.sealSeg, nil
	}
	e.mu.Unlock()
	switch {
	case closed:
		return nil, 0, ErrClosed
	case empty && frozen == 0: // a read freezes only a memtable with writes
		return nil, 0, nil
	}
	log, err := e.liveLog()
	var seg uint64
	if err == nil {
		seg, err = log.Rotate()
	}
	if err != nil {
		return nil, 0, diskErr("starting a log segment", err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	e.freeze()
	e.sealSeg, e.sealed = seg, true
	return e.frozen, seg, nil
}

type flushStats struct{ written, replaced, pended int }

func (s *flushStats) add(o flushStats) {
	s.written += o.written
	s.replaced += o.replaced
	s.pended += o.pended
}

// lastDocID returns the largest document id r holds; stored is false when
// it holds none.
func lastDocID(r reader) (id uint64, stored bool, err error) {
	lo, hi := spaceBounds(spaceDocs)
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, false, err
	}
	if it.Last() {
		id, err = parseDocKey(it.Key())
		stored = err == nil
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
// for an id that counts. An iterator's error is returned at once: Pebble
// clears it on the next seek, and a read that failed is not "not stored".
func (e *DB) heldBy(it *pebble.Iterator, fp uint64, counts func(id uint64) bool) (bool, error) {
	for e.seekPostings(it, fp); it.Valid(); it.Next() {
		f, id, err := parsePostingKey(it.Key())
		if err != nil {
			return false, err
		}
		if f != fp {
			return false, nil
		}
		if counts(id) {
			return true, nil
		}
	}
	return false, it.Error()
}

// flushJob is one flush of a memtable: its writes, one batch per keyspace
// (the tables' per table too), each in key order, which commit writes
// into one sstable. None is indexed: nothing reads them back.
type flushJob struct {
	e       *DB
	m       *memtable
	old     *state // only flushes replace it, and flushMu is held
	docsB   *pebble.Batch
	postB   *pebble.Batch
	metaB   *pebble.Batch
	tables  []tableBatches
	docs    int64           // documents after the flush
	changes []postingChange // the postings it writes: the cache's units take them
	// orphans are fingerprints that may have lost their last document,
	// checked once the batch holds every change.
	orphans map[uint64]bool
	stats   flushStats
}

func (f *flushJob) close() {
	for _, b := range []*pebble.Batch{f.docsB, f.postB, f.metaB} {
		if b != nil {
			b.Close()
		}
	}
	for _, tb := range f.tables {
		tb.close()
	}
}

// flushMemtable commits m to Pebble at once and installs the new state;
// frozen says m is the oldest frozen memtable, which leaves the list then.
func (e *DB) flushMemtable(m *memtable, walFrom wal.Position, frozen bool) (flushStats, error) {
	f := &flushJob{e: e, m: m, old: e.st, docsB: e.pdb.NewBatch(), postB: e.pdb.NewBatch(), metaB: e.pdb.NewBatch(),
		orphans: map[uint64]bool{}}
	defer f.close()
	if err := f.writeDocuments(); err != nil {
		return f.stats, err
	}
	if err := f.writePostings(); err != nil {
		return f.stats, err
	}
	adds, dels, err := f.tableChanges()
	if err != nil {
		return f.stats, err
	}
	old := f.old
	units, dropped, carry := old.units.next(f.docs, f.changes)
	st := newState(slices.Clone(old.tables), f.docs, old.fps, walFrom, units)
	outs, err := f.mergeTables(st, adds, dels)
	if err != nil {
		return f.stats, err
	}
	var fills []filled
	for t, r := range outs {
		if r.code != nil {
			if err := f.metaB.Set(metaCodeKey(t, st.tables[t].code), r.code, nil); err != nil {
				return f.stats, err
			}
		}
		dropped = append(dropped, r.replaced...)
		fills = append(fills, r.fill...)
		f.stats.written += r.written
		f.stats.pended += r.pended
		f.stats.replaced += len(r.replaced)
		if t == 0 {
			st.fps += int64(r.added - r.removed)
		}
	}
	if err := f.writeMeta(st); err != nil {
		return f.stats, err
	}
	if err := f.commit(); err != nil {
		return f.stats, err
	}
	st.open(e.pdb)
	e.mu.Lock()
	e.st = st
	for _, s := range dropped {
		e.cache.drop(s)
	}
	if frozen {
		// Reads freeze newer memtables meanwhile, never older ones.
		e.frozen = e.frozen[:len(e.frozen)-1]
	}
	e.cond.Broadcast()
	e.mu.Unlock()
	// Outside the lock: a query may have cached a new block first, and put
	// then keeps its copy.
	for _, fl := range fills {
		if fl.fps == nil {
			e.cache.putBlock(fl.slot, newCachedBlock(fl.pk, fl.pend))
		} else {
			e.cache.put(fl.slot, fl.fps, fl.pend)
		}
	}
	for _, c := range carry {
		e.cache.putBlock(c.slot, c.b)
	}
	return f.stats, old.unref()
}

// writeDocuments writes the memtable's documents, in id order, and notes
// the postings changes they make.
func (f *flushJob) writeDocuments() error {
	m := f.m
	f.docs = f.old.docs
	ids := make([]uint64, 0, len(m.docs))
	for id := range m.docs {
		ids = append(ids, id)
	}
	radix.Sort(ids)
	f.changes = make([]postingChange, 0, len(ids))
	// An id above every stored one is new: no look-up, which a caller that
	// numbers its documents as it goes (NextID) would otherwise pay for
	// every insert.
	top, stored, err := lastDocID(f.old.snap)
	if err != nil {
		return err
	}
	for _, id := range ids {
		d := m.docs[id]
		if stored && id <= top {
			ofp, found, err := f.storedFingerprint(id)
			if err != nil {
				return err
			}
			if found {
				f.changes = append(f.changes, postingChange{fp: ofp, id: id})
				if !d.live || d.fp != ofp {
					f.orphans[ofp] = true
				}
				f.docs--
			}
		}
		if d.live {
			f.changes = append(f.changes, postingChange{fp: d.fp, id: id, name: d.name, add: true})
			if err := f.docsB.Set(docKey(id), docValue(d.fp, d.name), nil); err != nil {
				return err
			}
			f.docs++
		} else if err := f.docsB.Delete(docKey(id), nil); err != nil {
			return err
		}
	}
	return nil
}

// storedFingerprint returns the fingerprint Pebble holds for document id.
func (f *flushJob) storedFingerprint(id uint64) (fp uint64, found bool, err error) {
	v, c, err := f.e.pdb.Get(docKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer c.Close()
	fp, err = docFingerprint(id, v)
	return fp, err == nil, err
}

// writePostings writes the postings changes in key order: they are in id
// order, removal before addition, and the sort by fingerprint is stable.
func (f *flushJob) writePostings() error {
	sortChangesByFP(f.changes)
	for _, c := range f.changes {
		var err error
		if c.add {
			err = f.postB.Set(postingKey(c.fp, c.id), []byte(c.name), nil)
		} else {
			err = f.postB.Delete(postingKey(c.fp, c.id), nil)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// tableChanges returns the fingerprints the tables gain (adds: no stored
// document had them) and lose (dels: no document keeps them), each sorted.
func (f *flushJob) tableChanges() (adds, dels []uint64, err error) {
	m := f.m
	for fp, ids := range m.byFP {
		if len(ids) > 0 {
			adds = append(adds, fp)
		} else {
			f.orphans[fp] = true // indexed here, all its ids gone: maybe stored before
		}
	}
	if len(adds) == 0 && len(f.orphans) == 0 {
		return nil, nil, nil
	}
	radix.Sort(adds)
	if adds, err = f.fresh(adds); err != nil {
		return nil, nil, err
	}
	lo, hi := spaceBounds(spacePostings)
	it, err := f.old.snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return nil, nil, err
	}
	// An orphan stays if a document of this flush has it, or a stored one
	// that this flush does not rewrite: every id it writes is in m.docs,
	// and its new postings are in m.byFP.
	for fp := range f.orphans {
		if len(m.byFP[fp]) > 0 {
			continue
		}
		held, err := f.e.heldBy(it, fp, func(id uint64) bool { _, ok := m.docs[id]; return !ok })
		if err != nil {
			it.Close()
			return nil, nil, err
		}
		if !held {
			dels = append(dels, fp)
		}
	}
	return adds, dels, errors.Join(it.Error(), it.Close())
}

// fresh returns the fingerprints of adds (sorted) that no stored document
// has: those already in the tables change nothing there, and mergeTable
// takes the rest as new, so that it can put them in pending lists without
// reading their blocks. Each check is a seek, most of them cache misses in
// a large index: the cores take a share each, in order.
func (f *flushJob) fresh(adds []uint64) ([]uint64, error) {
	e, old := f.e, f.old
	// Most of these fingerprints are new, and most postings are in the
	// last level, where Pebble reads no bloom filter unless told: they are
	// large, and most look-ups there find their key. Here most do not, and
	// the filter saves a data block read from disk per fingerprint, but
	// only while the filters (1.25 bytes per posting) stay in the cache;
	// otherwise they would be read again and again.
	useL6 := e.prefixSeek && old.docs*10/8 <= e.pebbleCache/2
	parts := min(runtime.GOMAXPROCS(0), max(len(adds)/4096, 1))
	fresh, err := parallel(context.Background(), parts, func(part int) ([]uint64, error) {
		share := adds[part*len(adds)/parts : (part+1)*len(adds)/parts]
		lo, hi := spaceBounds(spacePostings)
		it, err := old.snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi, UseL6Filters: useL6})
		if err != nil {
			return nil, err
		}
		var out []uint64
		for _, fp := range share {
			held, err := e.heldBy(it, fp, func(uint64) bool { return true })
			if err != nil {
				it.Close()
				return nil, err
			}
			if !held {
				out = append(out, fp)
			}
		}
		return out, errors.Join(it.Error(), it.Close())
	})
	return slices.Concat(fresh...), err
}

// mergeTables merges adds and dels into every table of st, on every core,
// each table into batches of its own.
func (f *flushJob) mergeTables(st *state, adds, dels []uint64) ([]mergeResult, error) {
	e := f.e
	f.tables = make([]tableBatches, len(e.design.Tables))
	outs, err := parallel(context.Background(), len(e.design.Tables), func(t int) ([]mergeResult, error) {
		tb := &e.design.Tables[t]
		f.tables[t] = tableBatches{e.pdb.NewBatch(), e.pdb.NewBatch(), e.pdb.NewBatch()}
		r, err := e.mergeTable(&f.tables[t], f.old, st, t, permuteSorted(tb, adds), permuteSorted(tb, dels))
		return []mergeResult{r}, err
	})
	if err != nil {
		return nil, err
	}
	rs := make([]mergeResult, len(outs))
	for t, o := range outs {
		rs[t] = o[0]
	}
	return rs, nil
}

// permuteSorted returns fps permuted by table tb, sorted.
func permuteSorted(tb *permutation.Table, fps []uint64) []uint64 {
	perm := make([]uint64, len(fps))
	for i, fp := range fps {
		perm[i] = tb.Permute(fp)
	}
	radix.Sort(perm)
	return perm
}

// writeMeta writes the counters and WAL position of st, and the format
// version: an older index may get pending lists of several runs now.
func (f *flushJob) writeMeta(st *state) error {
	for _, kv := range [][2][]byte{
		{metaFormat, formatValue(formatVersion)},
		{metaCounts, countsValue(st.docs, st.fps)},
		{metaWALFrom, walPosValue(st.walFrom)},
	} {
		if err := f.metaB.Set(kv[0], kv[1], nil); err != nil {
			return err
		}
	}
	return nil
}

// commit writes the batches in keyspace order (meta, documents, postings,
// then blocks, directory entries and pending lists, each in table order),
// durably and at once.
func (f *flushJob) commit() error {
	parts := []*pebble.Batch{f.metaB, f.docsB, f.postB}
	for _, space := range []func(tableBatches) *pebble.Batch{tableBatches.blocksOf, tableBatches.dirOf, tableBatches.pendOf} {
		for _, tb := range f.tables {
			parts = append(parts, space(tb))
		}
	}
	if hook := f.e.opts.knobs.flushBatches; hook != nil {
		hook(parts)
	}
	if err := f.e.commit(context.Background(), parts...); err != nil {
		return fmt.Errorf("engine: committing a flush: %w", err)
	}
	return nil
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
