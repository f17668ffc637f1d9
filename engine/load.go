package engine

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"

	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/engine/internal/table"
	"github.com/simhashdb/simhashdb/engine/internal/tasks"
	"github.com/simhashdb/simhashdb/internal/radix"
)

// postingsPerSST is about how many postings a bulk load writes to one
// sstable. Flushes read the bloom filters of the postings (see
// flushMemtable), and Pebble reads a filter block through its cache: a
// file's filter (10 bits a posting) takes at most a sixteenth of a shard of
// the cache (Pebble makes 4 shards per core), so that the filters spread
// evenly over the shards. With larger filters a few shards hold more
// filters than they can keep, and a flush reads a filter from disk for
// most fingerprints. No smaller, though: a query whose seek moves to
// another file pays for setting up that file's iterator.
func (db *DB) postingsPerSST() int {
	if n := db.opts.knobs.postingsPerSST; n > 0 {
		return n
	}
	shard := db.budget.Base() / int64(4*runtime.GOMAXPROCS(0))
	return int(max(shard/16*8/10, 1<<16))
}

// Load stores many documents at once. Into an empty index it builds every
// table with a sort and a sequential pass and hands Pebble finished sstables
// (ingestion: no memtable, no compaction, no log); the load is atomic and
// durable when Load returns. Into an index that holds documents it falls
// back to batched inserts and a flush. A repeated id keeps its last
// document.
func (db *DB) Load(ctx context.Context, docs []Doc) (err error) {
	defer func() { err = storeErr(err) }()
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	stored, err := db.storedDocs(docs)
	if err != nil {
		return err
	}
	db.flushMu.Lock()
	db.mu.RLock()
	empty := db.st.docs == 0 && db.mem.Empty() && len(db.frozen) == 0 && !db.closed
	db.mu.RUnlock()
	if !empty {
		db.flushMu.Unlock()
		if err := db.InsertBatch(ctx, docs); err != nil {
			return err
		}
		return db.Flush(ctx)
	}
	defer db.flushMu.Unlock()
	// Writes that race the load would land in the memtable and the log,
	// which the ingested tables do not cover: hold commits for its length.
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	db.mu.RLock()
	empty = db.mem.Empty() && db.published == db.appended
	db.mu.RUnlock()
	if !empty {
		return ErrLoadConflict
	}
	return db.loadEmpty(ctx, stored)
}

// loadJob is one bulk load: sstables written to a temporary folder by
// tasks that share GOMAXPROCS slots, then ingested at once.
type loadJob struct {
	db     *DB
	docs   []Doc    // by id, each id once
	all    []uint64 // the documents' fingerprints, in id order
	out    *store.Load
	pool   *tasks.Pool
	tables []table.Index // the new directory and code of each table
	fps    int           // distinct fingerprints
}

// loadEmpty is Load into an empty index: the tables, documents and
// postings written as sstables and ingested at once.
func (db *DB) loadEmpty(ctx context.Context, in []Doc) error {
	docs := byID(in)
	out, err := db.store.NewLoad(loadSize(docs, len(db.design.Tables)))
	if err != nil {
		return err
	}
	defer out.Close()
	j := &loadJob{db: db, docs: docs, out: out, all: make([]uint64, len(docs)), tables: make([]table.Index, len(db.design.Tables))}
	// The documents' fingerprints, in id order: the tables permute and
	// sort them, and drop repeats after sorting (a permutation keeps equal
	// fingerprints equal), so they need not wait for the postings' sort.
	for i := range docs {
		j.all[i] = docs[i].Fingerprint
	}
	// Every piece of work is a task on one of GOMAXPROCS slots: the
	// documents in chunks of ids, the postings' sort and then each of its
	// files, each table. Writing the documents and postings takes Pebble
	// as long as all the tables take to build: on one goroutine they would
	// be the load's critical path, with a core idle at the end.
	procs := runtime.GOMAXPROCS(0)
	j.pool = tasks.New(ctx, procs)
	j.documents(procs)
	j.pool.Run("loading postings", j.postings)
	j.buildTables(procs)
	if err := j.pool.Wait(); err != nil {
		return store.DiskErr("writing a bulk load", err)
	}
	if err := j.meta(); err != nil {
		return store.DiskErr("writing a bulk load", err)
	}
	if err := out.Ingest(ctx); err != nil {
		return err
	}
	return db.install(newState(j.tables, int64(len(docs)), int64(j.fps), db.st.walFrom, db.newUnits(int64(len(docs)))), successor{split: true})
}

// byID returns docs by id, the last of a repeated id winning. Input already
// in strictly increasing id order (the usual bulk case) is used as it is.
func byID(in []Doc) []Doc {
	if slices.IsSortedFunc(in, func(a, b Doc) int { return cmpU64(a.ID, b.ID) }) && !hasRepeat(in) {
		return in
	}
	docs := slices.Clone(in)
	slices.SortStableFunc(docs, func(a, b Doc) int { return cmpU64(a.ID, b.ID) })
	w := 0
	for i := range docs {
		if i+1 < len(docs) && docs[i+1].ID == docs[i].ID {
			continue
		}
		docs[w] = docs[i]
		w++
	}
	return docs[:w]
}

// newSST starts an sstable of the load, named name.
func (j *loadJob) newSST(name string) (*store.SSTable, error) { return j.out.Create(name) }

// loadSize is about what a bulk load of docs into tables tables writes:
// each document's record and posting with their keys and the sstables'
// index and filter bytes, and each table's fingerprints at the
// information bound's bits and a byte more. The disk must have that room
// (store.NewLoad).
func loadSize(docs []Doc, tables int) uint64 {
	const perKey = 2*format.PostingKeyLen + 8 + 8 // a record's and a posting's keys, the fingerprint, index and filter bytes
	size := uint64(0)
	for _, d := range docs {
		size += perKey + 2*uint64(len(d.Name)+len(d.Sketch))
	}
	perFP := codec.Bound(len(docs))/8 + 1
	return size + uint64(float64(len(docs)*tables)*perFP)
}

// documents starts the tasks that write the documents, a file per chunk
// of ids.
func (j *loadJob) documents(procs int) {
	docs := j.docs
	chunk := max((len(docs)+4*procs-1)/(4*procs), 1<<16)
	if n := j.db.opts.knobs.docsPerSST; n > 0 {
		chunk = n
	}
	for lo := 0; lo < len(docs); lo += chunk {
		part := docs[lo:min(lo+chunk, len(docs))]
		j.pool.Run("loading documents", func() error {
			sw, err := j.newSST(fmt.Sprintf("docs-%d", lo))
			if err != nil {
				return err
			}
			// The writer copies what it is given, so one key and one value
			// buffer serve every document.
			var kb, vb []byte
			for _, d := range part {
				kb, vb = format.AppendDocKey(kb[:0], d.ID), format.AppendDocValue(vb[:0], d.Fingerprint, j.db.docValueName(d.Name))
				if err := sw.Set(kb, vb); err != nil {
					sw.Close()
					return err
				}
			}
			return sw.Close()
		})
	}
}

// postings sorts the postings and starts a task for each of their files.
func (j *loadJob) postings() error {
	docs := j.docs
	// Postings order: (fingerprint, id) pairs stably radix-sorted by
	// fingerprint, which keeps id order within a fingerprint. The pairs
	// carry the ids themselves, so the postings are written without
	// reading docs in fingerprint order, a cache miss per document; only
	// names, if there are any, are fetched by index.
	named := slices.ContainsFunc(docs, func(d Doc) bool { return d.Name != "" })
	keys := slices.Clone(j.all)
	var ids []uint64
	var order []uint32
	if named {
		order = make([]uint32, len(docs))
		for i := range order {
			order[i] = uint32(i)
		}
		radix.SortPairs(keys, order)
	} else {
		ids = make([]uint64, len(docs))
		for i := range docs {
			ids[i] = docs[i].ID
		}
		radix.SortPairs(keys, ids)
	}
	// Postings go to sstables of postingsPerSST keys or so, a
	// fingerprint's postings in one: each has a bloom filter, which
	// flushes read (see flushJob.fresh), and a filter block must fit in
	// the cache. Each file is a task of its own.
	perSST := j.db.postingsPerSST()
	for lo := 0; lo < len(keys); {
		hi := min(lo+perSST, len(keys))
		for hi < len(keys) && keys[hi] == keys[hi-1] {
			hi++
		}
		from := lo
		j.pool.Run("loading postings", func() error {
			sw, err := j.newSST(fmt.Sprintf("postings-%d", from))
			if err != nil {
				return err
			}
			var kb, vb []byte
			for i := from; i < hi; i++ {
				if named {
					d := &docs[order[i]]
					kb, vb = format.AppendPostingKey(kb[:0], keys[i], d.ID), append(vb[:0], d.Name...)
				} else {
					kb, vb = format.AppendPostingKey(kb[:0], keys[i], ids[i]), vb[:0]
				}
				if err := sw.Set(kb, vb); err != nil {
					sw.Close()
					return err
				}
			}
			return sw.Close()
		})
		lo = hi
	}
	return nil
}

// buildTables starts a task per table: permute, sort, train, encode.
func (j *loadJob) buildTables(procs int) {
	// Each table task takes a pair of buffers (the permuted fingerprints
	// and the sort's scratch, 16 bytes a document) that the next table
	// reuses, rather than garbage for the collector to let pile up. There are as many pairs as slots, so a running task always finds
	// one.
	scratch := make(chan *[2][]uint64, procs)
	for range procs {
		scratch <- new([2][]uint64)
	}
	for t := range j.db.design.Tables {
		j.pool.Run(fmt.Sprintf("loading table %d", t), func() error {
			sc := <-scratch
			defer func() { scratch <- sc }()
			return j.buildTable(t, sc)
		})
	}
}

// buildTable writes table t, with sc as its buffers.
func (j *loadJob) buildTable(t int, sc *[2][]uint64) error {
	tb := &j.db.design.Tables[t]
	if sc[0] == nil {
		sc[0], sc[1] = make([]uint64, len(j.all)), make([]uint64, len(j.all))
	}
	perm := sc[0][:len(j.all)]
	for i, fp := range j.all {
		perm[i] = tb.Permute(fp)
	}
	radix.SortBuf(perm, sc[1])
	perm = slices.Compact(perm)
	if t == 0 {
		j.fps = len(perm) // the same in every table
	}
	code, err := codec.Train(perm)
	if err != nil {
		return err
	}
	ti := &j.tables[t]
	ti.AddCode(1, code)
	tw, err := j.newSST(fmt.Sprintf("table-%03d", t))
	if err != nil {
		return err
	}
	dw, err := j.newSST(fmt.Sprintf("dir-%03d", t))
	if err != nil {
		tw.Close()
		return err
	}
	w := table.Writer{Table: t, Blocks: tw, Dir: dw, Index: ti}
	err = codec.Encode(perm, code, 1, j.db.block, func(key uint64, block []byte) error {
		return w.Block(key, block, nil)
	})
	ti.SlabSlots()
	return cmp.Or(err, tw.Close(), dw.Close())
}

// meta writes the codes and counters, to be ingested with the rest.
func (j *loadJob) meta() error {
	sw, err := j.newSST("meta")
	if err != nil {
		return err
	}
	for t := range j.tables {
		cb, err := j.tables[t].Codes()[1].MarshalBinary()
		if err == nil {
			err = sw.Set(format.MetaCodeKey(t, 1), cb)
		}
		if err != nil {
			sw.Close()
			return err
		}
	}
	if err := sw.Set(format.MetaCounts, format.CountsValue(int64(len(j.docs)), int64(j.fps))); err != nil {
		sw.Close()
		return err
	}
	return sw.Close()
}

func hasRepeat(sorted []Doc) bool {
	for i := 1; i < len(sorted); i++ {
		if sorted[i].ID == sorted[i-1].ID {
			return true
		}
	}
	return false
}
