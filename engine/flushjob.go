package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"

	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/memtable"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/engine/internal/table"
	"github.com/simhashdb/simhashdb/engine/internal/tasks"
	"github.com/simhashdb/simhashdb/engine/internal/units"
	"github.com/simhashdb/simhashdb/internal/radix"
	"github.com/simhashdb/simhashdb/permutation"
)

// flushJob is one flush of a memtable: its writes, one run per keyspace
// (the tables' per table too), each in key order, which commit writes
// into one sstable. The documents and postings are read from the memtable
// as the sstable is written, never copied into a batch: a flush holds
// little more than the memtable it writes.
type flushJob struct {
	db      *DB
	m       *memtable.Memtable
	old     *state // only flushes replace it, and flushMu is held
	docsW   store.Writes
	postW   store.Writes
	metaB   *store.Batch
	tables  []table.Batches
	docs    int64          // documents after the flush
	changes []units.Change // the postings it writes: the cache's units take them
	// orphans are fingerprints that may have lost their last document,
	// checked once the batch holds every change.
	orphans map[uint64]bool
	stats   flushStats
}

func (f *flushJob) close() {
	if f.metaB != nil {
		f.metaB.Close()
	}
	for _, tb := range f.tables {
		tb.Close()
	}
}

// batchEntryOverhead bounds what a Pebble batch adds to an entry's key and
// value: its kind and two varint lengths.
const batchEntryOverhead = 1 + 2*binary.MaxVarintLen32

// writeDocuments writes the memtable's documents, in id order, and notes
// the postings changes they make.
func (f *flushJob) writeDocuments() error {
	m := f.m
	f.docs = f.old.docs
	ids := make([]uint64, 0, m.Len())
	size := 0
	for id, d := range m.Docs() {
		ids = append(ids, id)
		size += format.DocKeyLen + 8 + len(d.Name) + batchEntryOverhead
	}
	radix.Sort(ids)
	f.changes = make([]units.Change, 0, len(ids))
	// An id above every stored one is new: no look-up, which a caller that
	// numbers its documents as it goes (NextID) would otherwise pay for
	// every insert.
	top, stored, err := lastDocID(f.old.snap)
	if err != nil {
		return err
	}
	for _, id := range ids {
		d, _ := m.Get(id)
		if stored && id <= top {
			ofp, found, err := f.storedFingerprint(id)
			if err != nil {
				return err
			}
			if found {
				f.changes = append(f.changes, units.Change{FP: ofp, ID: id})
				if !d.Live || d.FP != ofp {
					f.orphans[ofp] = true
				}
				f.docs--
			}
		}
		if d.Live {
			f.changes = append(f.changes, units.Change{FP: d.FP, ID: id, Name: d.Name, Add: true})
			f.docs++
		}
	}
	f.docsW = store.Writes{Size: uint64(size), Each: func(w store.Writer) error {
		var key, value []byte
		for _, id := range ids {
			d, _ := m.Get(id)
			key = format.AppendDocKey(key[:0], id)
			if d.Live {
				value = format.AppendDocValue(value[:0], d.FP, docValueName(f.db, d.Name))
			}
			if err := setOrDelete(w, key, value, d.Live); err != nil {
				return err
			}
		}
		return nil
	}}
	return nil
}

// storedFingerprint returns the fingerprint Pebble holds for document id.
func (f *flushJob) storedFingerprint(id uint64) (fp uint64, found bool, err error) {
	v, c, err := f.db.store.Get(format.DocKey(id))
	if errors.Is(err, store.ErrKeyNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	defer c.Close()
	fp, err = format.DocFingerprint(id, v)
	return fp, err == nil, err
}

// writePostings writes the postings changes in key order: they are in id
// order, removal before addition, and the sort by fingerprint is stable,
// so a posting removed and added again is written once, as added.
func (f *flushJob) writePostings() {
	sortChangesByFP(f.changes)
	size := 0
	for _, c := range f.changes {
		size += format.PostingKeyLen + len(c.Name) + batchEntryOverhead
	}
	ch := f.changes
	f.postW = store.Writes{Size: uint64(size), Each: func(w store.Writer) error {
		var key, value []byte
		for i, c := range ch {
			if i+1 < len(ch) && ch[i+1].FP == c.FP && ch[i+1].ID == c.ID {
				continue
			}
			key = format.AppendPostingKey(key[:0], c.FP, c.ID)
			value = append(value[:0], c.Name...)
			if err := setOrDelete(w, key, value, c.Add); err != nil {
				return err
			}
		}
		return nil
	}}
}

// setOrDelete writes key's value to w if set, or deletes key.
func setOrDelete(w store.Writer, key, value []byte, set bool) error {
	if set {
		return w.Set(key, value)
	}
	return w.Delete(key)
}

// tableChanges returns the fingerprints the tables gain (adds: no stored
// document had them) and lose (dels: no document keeps them), each sorted.
func (f *flushJob) tableChanges() (adds, dels []uint64, err error) {
	m := f.m
	for fp, ids := range m.Fingerprints() {
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
	lo, hi := format.SpaceBounds(format.SpacePostings)
	it, err := f.old.snap.NewIter(store.IterOptions{Lower: lo, Upper: hi})
	if err != nil {
		return nil, nil, err
	}
	// An orphan stays if a document of this flush has it, or a stored one
	// that this flush does not rewrite: every id it writes is in m.docs,
	// and its new postings are in m.byFP.
	for fp := range f.orphans {
		if len(m.IDs(fp)) > 0 {
			continue
		}
		held, err := f.db.heldBy(it, fp, func(id uint64) bool { return !m.Touched(id) })
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
// has: those already in the tables change nothing there, and table.Merge
// takes the rest as new, so that it can put them in pending lists without
// reading their blocks. Each check is a seek, most of them cache misses in
// a large index: the cores take a share each, in order.
func (f *flushJob) fresh(adds []uint64) ([]uint64, error) {
	db, old := f.db, f.old
	// Most of these fingerprints are new, and most postings are in the
	// last level, where Pebble reads no bloom filter unless told: they are
	// large, and most look-ups there find their key. Here most do not, and
	// the filter saves a data block read from disk per fingerprint, but
	// only while the filters (1.25 bytes per posting) stay in the cache;
	// otherwise they would be read again and again.
	useL6 := db.store.PrefixSeek && old.docs*10/8 <= db.budget.Base()/2
	parts := min(runtime.GOMAXPROCS(0), max(len(adds)/4096, 1))
	fresh, err := tasks.Parallel(context.Background(), parts, func(part int) ([]uint64, error) {
		share := adds[part*len(adds)/parts : (part+1)*len(adds)/parts]
		lo, hi := format.SpaceBounds(format.SpacePostings)
		it, err := old.snap.NewIter(store.IterOptions{Lower: lo, Upper: hi, UseL6Filters: useL6})
		if err != nil {
			return nil, err
		}
		var out []uint64
		for _, fp := range share {
			held, err := db.heldBy(it, fp, func(uint64) bool { return true })
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
func (f *flushJob) mergeTables(st *state, adds, dels []uint64) ([]table.MergeResult, error) {
	db := f.db
	f.tables = make([]table.Batches, len(db.design.Tables))
	outs, err := tasks.Parallel(context.Background(), len(db.design.Tables), func(t int) ([]table.MergeResult, error) {
		tb := &db.design.Tables[t]
		f.tables[t] = table.Batches{Blocks: db.store.NewBatch(), Dir: db.store.NewBatch(), Pend: db.store.NewBatch()}
		m := table.Merge{Table: t, Old: &f.old.tables[t], New: &st.tables[t], BlockSize: db.block, Cache: db.cache,
			Read:    func(j int) (fps, pend []uint64, err error) { return f.old.blocks.Decoded(t, j) },
			Batches: &f.tables[t]}
		r, err := m.Run(permuteSorted(tb, adds), permuteSorted(tb, dels))
		return []table.MergeResult{r}, err
	})
	if err != nil {
		return nil, err
	}
	rs := make([]table.MergeResult, len(outs))
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
		{format.MetaFormat, format.VersionValue(format.VersionFor(f.db.sketch > 0))},
		{format.MetaCounts, format.CountsValue(st.docs, st.fps)},
		{format.MetaWALFrom, format.WALPosValue(st.walFrom)},
	} {
		if err := f.metaB.Set(kv[0], kv[1]); err != nil {
			return err
		}
	}
	if st.applied == 0 { // an index whose commits never had a position keeps no key
		return nil
	}
	return f.metaB.Set(format.MetaApplied, format.UvarintValue(st.applied))
}

// commit writes the runs in keyspace order (meta, documents, postings,
// then blocks, directory entries and pending lists, each in table order),
// durably and at once.
func (f *flushJob) commit() error {
	st := f.db.store
	batches := []*store.Batch{f.metaB}
	// In key order: the keyspaces, then the tables in each.
	for _, space := range []func(table.Batches) *store.Batch{
		func(b table.Batches) *store.Batch { return b.Blocks },
		func(b table.Batches) *store.Batch { return b.Dir },
		func(b table.Batches) *store.Batch { return b.Pend },
	} {
		for _, tb := range f.tables {
			batches = append(batches, space(tb))
		}
	}
	parts := []store.Writes{st.BatchWrites(batches[0]), f.docsW, f.postW}
	for _, b := range batches[1:] {
		parts = append(parts, st.BatchWrites(b))
	}
	if hook := f.db.opts.knobs.flushWrites; hook != nil {
		hook(parts, batches)
	}
	if err := st.Commit(context.Background(), parts...); err != nil {
		return fmt.Errorf("engine: committing a flush: %w", err)
	}
	return nil
}

// sortChangesByFP sorts ch by fingerprint, stably: changes in id order,
// removal before addition, end up in posting key order.
func sortChangesByFP(ch []units.Change) {
	keys := make([]uint64, len(ch))
	order := make([]uint32, len(ch))
	for i, c := range ch {
		keys[i], order[i] = c.FP, uint32(i)
	}
	radix.SortPairs(keys, order)
	sorted := make([]units.Change, len(ch))
	for i, o := range order {
		sorted[i] = ch[o]
	}
	copy(ch, sorted)
}
