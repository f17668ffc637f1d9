package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"runtime"
	"slices"

	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/engine/internal/table"
	"github.com/simhashdb/simhashdb/engine/internal/tasks"
	"github.com/simhashdb/simhashdb/internal/radix"
	"github.com/simhashdb/simhashdb/internal/spill"
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

// DocsOf is a slice of documents as the sequence Load takes.
func DocsOf(docs []Doc) iter.Seq2[Doc, error] {
	return func(yield func(Doc, error) bool) {
		for _, d := range docs {
			if !yield(d, nil) {
				return
			}
		}
	}
}

// Load stores every document docs yields, at once. An error from docs
// stops the load with nothing stored, and Load returns it wrapped. A
// repeated id keeps its last document. docs must not write to db.
//
// Into an empty index Load builds every table with a sort and a
// sequential pass and hands Pebble finished sstables (ingestion: no
// memtable, no compaction, no log); the load is atomic and durable when
// Load returns. It sorts the documents in memory while they take less
// than a quarter of the memory the process may use (at most 1 GiB), and
// beyond that on disk, in sorted runs in the index's scratch folder; what
// it holds for the whole load is then each document's fingerprint, and
// each table's sort takes 16 bytes a document while it runs. The disk
// must have room for the runs and the index they become.
//
// Into an index that holds documents, Load gathers them in memory and
// inserts them as one batch (InsertBatch), then flushes.
func (db *DB) Load(ctx context.Context, docs iter.Seq2[Doc, error]) (err error) {
	defer func() { err = storeErr(err) }()
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	db.flushMu.Lock()
	db.mu.RLock()
	empty := db.st.docs == 0 && db.mem.Empty() && len(db.frozen) == 0 && !db.closed
	db.mu.RUnlock()
	if !empty {
		db.flushMu.Unlock()
		var all []Doc
		for d, err := range docs {
			if err != nil {
				return fmt.Errorf("the documents to load: %w", err)
			}
			all = append(all, d)
		}
		if err := db.InsertBatch(ctx, all); err != nil {
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
	return db.loadEmpty(ctx, docs)
}

// loadMemory is how many bytes of documents a load into an empty index
// sorts in memory; larger loads sort in runs on disk.
func (db *DB) loadMemory() int64 {
	if n := db.opts.knobs.loadMemory; n > 0 {
		return n
	}
	limit := db.opts.memLimit
	if limit <= 0 {
		return 1 << 30
	}
	return min(max(limit/4, 64<<20), 1<<30)
}

// loadJob is one bulk load: sstables written to a temporary folder by
// tasks that share GOMAXPROCS slots, then ingested at once.
type loadJob struct {
	db      *DB
	part    *spill.Part // by id, each id once (a load sorted in memory)
	sorted  *spill.Sort // a load sorted on disk
	spilled uint64      // recordsSize of the parts sorted on disk
	n       int64       // documents
	all     []uint64    // the documents' fingerprints, in id order
	out     *store.Load
	pool    *tasks.Pool
	tables  []table.Index // the new directory and code of each table
	fps     int           // distinct fingerprints
}

// loadEmpty is Load into an empty index: the tables, documents and
// postings written as sstables and ingested at once. The documents are
// sorted in memory, or in runs on disk when they outgrow loadMemory.
func (db *DB) loadEmpty(ctx context.Context, in iter.Seq2[Doc, error]) error {
	out, err := db.store.NewLoad(0)
	if err != nil {
		return err
	}
	defer out.Close()
	j := &loadJob{db: db, out: out, tables: make([]table.Index, len(db.design.Tables)), sorted: spill.NewSort(out)}
	part := &spill.Part{}
	memory := db.loadMemory()
	for d, err := range in {
		if err != nil {
			return fmt.Errorf("the documents to load: %w", err)
		}
		if part.Len()%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		// As the index stores it: the sketch before the name.
		if err := db.checkDoc(&d); err != nil {
			return err
		}
		part.Add(d.ID, d.Fingerprint, d.Sketch, d.Name)
		if part.Memory() >= memory {
			if err := j.spill(part); err != nil {
				return err
			}
			part.Reset()
		}
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if j.sorted.Runs() > 0 {
		if part.Len() > 0 {
			if err := j.spill(part); err != nil {
				return err
			}
		}
		return j.fromRuns(ctx)
	}
	part.SortByID()
	if err := out.CheckRoom(loadSize(part, len(db.design.Tables))); err != nil {
		return err
	}
	// The documents' fingerprints, in id order: the tables permute and
	// sort them, and drop repeats after sorting (a permutation keeps equal
	// fingerprints equal), so they need not wait for the postings' sort.
	j.part, j.n, j.all = part, int64(part.Len()), part.FPs
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
	return j.finish(ctx)
}

// finish waits for the load's tasks, writes its meta and ingests it.
func (j *loadJob) finish(ctx context.Context) error {
	db := j.db
	if err := j.pool.Wait(); err != nil {
		return store.DiskErr("writing a bulk load", err)
	}
	if err := j.meta(); err != nil {
		return store.DiskErr("writing a bulk load", err)
	}
	if err := j.out.Ingest(ctx); err != nil {
		return err
	}
	st := newState(j.tables, j.n, int64(j.fps), db.st.walFrom, db.newUnits(j.n))
	st.applied = db.st.applied
	return db.install(st, successor{split: true})
}

// newSST starts an sstable of the load, named name.
func (j *loadJob) newSST(name string) (*store.SSTable, error) { return j.out.Create(name) }

// loadSize is about what a bulk load of the part p into tables tables
// writes: each document's record and posting with their keys and the
// sstables' index and filter bytes (recordsSize), and each table's
// fingerprints at the information bound's bits and a byte more
// (tablesSize). The disk must have that room (store.Load.CheckRoom).
func loadSize(p *spill.Part, tables int) uint64 {
	return recordsSize(p) + tablesSize(int64(p.Len()), tables)
}

func recordsSize(p *spill.Part) uint64 {
	const perKey = 2*format.PostingKeyLen + 8 + 8 // a record's and a posting's keys, the fingerprint, index and filter bytes
	return uint64(p.Len())*perKey + 2*uint64(p.NameBytes())
}

func tablesSize(docs int64, tables int) uint64 {
	perFP := codec.Bound(int(docs))/8 + 1
	return uint64(float64(docs*int64(tables)) * perFP)
}

// documents starts the tasks that write the documents, a file per chunk
// of ids.
func (j *loadJob) documents(procs int) {
	p := j.part
	chunk := max((p.Len()+4*procs-1)/(4*procs), 1<<16)
	if n := j.db.opts.knobs.docsPerSST; n > 0 {
		chunk = n
	}
	for lo := 0; lo < p.Len(); lo += chunk {
		hi := min(lo+chunk, p.Len())
		j.pool.Run("loading documents", func() error {
			sw, err := j.newSST(fmt.Sprintf("docs-%d", lo))
			if err != nil {
				return err
			}
			// The writer copies what it is given, so one key and one value
			// buffer serve every document.
			var kb, vb []byte
			for i := lo; i < hi; i++ {
				kb, vb = format.AppendDocKey(kb[:0], p.IDs[i]), format.AppendDocValue(vb[:0], p.FPs[i], docValueName(j.db, p.Name(i)))
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
	p := j.part
	keys, ids, order := p.ByPosting()
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
			var kb, name []byte
			for i := from; i < hi; i++ {
				if order != nil {
					name = p.Name(int(order[i]))
				}
				kb = format.AppendPostingKey(kb[:0], keys[i], ids[i])
				if err := sw.Set(kb, name); err != nil {
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
	if err := sw.Set(format.MetaCounts, format.CountsValue(j.n, int64(j.fps))); err != nil {
		sw.Close()
		return err
	}
	return sw.Close()
}

// spill writes p, a part of a load larger than its memory, as sorted runs
// (spill.Sort), once the disk has room for them and for the index that
// every part so far becomes.
func (j *loadJob) spill(p *spill.Part) error {
	runs := recordsSize(p) // about both runs' bytes
	j.spilled += runs
	j.n += int64(p.Len())
	if err := j.out.CheckRoom(runs + j.spilled + tablesSize(j.n, len(j.tables))); err != nil {
		return err
	}
	if err := j.sorted.Spill(p); err != nil {
		return store.DiskErr("sorting a bulk load", err)
	}
	return nil
}

// fromRuns finishes a load sorted on disk: the runs merged into the
// documents, which gives the tables their fingerprints, and then into the
// postings, while the tables are built.
func (j *loadJob) fromRuns(ctx context.Context) error {
	procs := runtime.GOMAXPROCS(0)
	j.pool = tasks.New(ctx, procs)
	j.pool.Run("loading documents", func() error {
		if err := j.mergedDocs(ctx); err != nil {
			return err
		}
		j.pool.Run("loading postings", func() error { return j.mergedPostings(ctx) })
		j.buildTables(procs)
		return nil
	})
	return j.finish(ctx)
}

// runErr is the error of a merge of a load's runs.
func runErr(err error) error {
	if errors.Is(err, spill.ErrCorrupt) {
		return fmt.Errorf("%w: a bulk load's scratch: %w", ErrCorrupt, err)
	}
	return err
}

// sstables writes a load's sorted records to files named prefix-N, a new
// file after perSST records where next allows.
type sstables struct {
	ctx    context.Context
	j      *loadJob
	prefix string
	perSST int
	sw     *store.SSTable
	in     int // records in sw
	n      int // records written
}

// set writes a record; split says whether it may start a file.
func (s *sstables) set(key, value []byte, split bool) error {
	if s.sw == nil || s.in >= s.perSST && split {
		if err := s.close(); err != nil {
			return err
		}
		var err error
		if s.sw, err = s.j.newSST(fmt.Sprintf("%s-%d", s.prefix, s.n)); err != nil {
			return err
		}
	}
	s.in++
	s.n++
	if s.n%4096 == 0 {
		if err := s.ctx.Err(); err != nil {
			return err
		}
	}
	return s.sw.Set(key, value)
}

func (s *sstables) close() error {
	if s.sw == nil {
		return nil
	}
	err := s.sw.Close()
	s.sw, s.in = nil, 0
	return err
}

// mergedDocs writes the documents of the runs, and their fingerprints in
// id order to j.all.
func (j *loadJob) mergedDocs(ctx context.Context) error {
	out := sstables{ctx: ctx, j: j, prefix: "docs", perSST: cmp.Or(j.db.opts.knobs.docsPerSST, 1<<20)}
	defer out.close()
	j.all = make([]uint64, 0, j.n)
	var kb, vb []byte
	err := j.sorted.Docs(func(id, fp uint64, name []byte) error {
		kb, vb = format.AppendDocKey(kb[:0], id), format.AppendDocValue(vb[:0], fp, docValueName(j.db, name))
		j.all = append(j.all, fp)
		return out.set(kb, vb, true)
	})
	if err != nil {
		return runErr(err)
	}
	j.n = int64(len(j.all))
	return out.close()
}

// mergedPostings writes the postings of the runs, a fingerprint's in one
// file.
func (j *loadJob) mergedPostings(ctx context.Context) error {
	out := sstables{ctx: ctx, j: j, prefix: "postings", perSST: j.db.postingsPerSST()}
	defer out.close()
	var kb []byte
	last := uint64(0)
	err := j.sorted.Postings(func(fp, id uint64, name []byte) error {
		kb = format.AppendPostingKey(kb[:0], fp, id)
		split := out.n == 0 || fp != last
		last = fp
		return out.set(kb, name, split)
	})
	if err != nil {
		return runErr(err)
	}
	return out.close()
}
