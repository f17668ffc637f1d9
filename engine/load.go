package engine

import (
	"cmp"
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/engine/internal/radix"
	"github.com/simhashdb/simhashdb/huffman"
)

// postingsPerSST is about how many postings a bulk load writes to one
// sstable. Flushes read the bloom filters of the postings (see
// flushMemtable), and Pebble reads a filter block through its cache: a
// file's filter (10 bits a posting) takes at most a sixteenth of a shard of
// the cache (Pebble makes 4 shards per core), so that the filters spread
// evenly over the shards. With filters of a quarter shard, a few shards
// held more filters than they could keep, and a flush read a filter from
// disk for most fingerprints: inserts at 100M were 60 times slower. No
// smaller, though: a query whose seek moves to another file pays for
// setting up that file's iterator.
func (e *DB) postingsPerSST() int {
	if testPostingsPerSST > 0 {
		return testPostingsPerSST
	}
	shard := e.pebbleCache / int64(4*runtime.GOMAXPROCS(0))
	return int(max(shard/16*8/10, 1<<16))
}

// testPostingsPerSST overrides postingsPerSST in tests, and
// testDocsPerSST the documents a bulk load writes to one sstable.
var testPostingsPerSST, testDocsPerSST int

// Load stores many documents at once. Into an empty index it builds every
// table with a sort and a sequential pass and hands Pebble finished sstables
// (ingestion: no memtable, no compaction, no log); the load is atomic and
// durable when Load returns. Into an index that holds documents it falls
// back to batched inserts and a flush. A repeated id keeps its last
// document.
func (e *DB) Load(ctx context.Context, docs []Doc) error {
	if e.opts.ReadOnly {
		return ErrReadOnly
	}
	for i := range docs {
		if len(docs[i].Name) > MaxName {
			return fmt.Errorf("%w: document %d: name of %d bytes, at most %d", ErrInput, docs[i].ID, len(docs[i].Name), MaxName)
		}
	}
	e.flushMu.Lock()
	e.mu.RLock()
	empty := e.st.docs == 0 && e.mem.empty() && e.imm == nil && !e.closed
	e.mu.RUnlock()
	if !empty {
		e.flushMu.Unlock()
		if err := e.InsertBatch(ctx, docs); err != nil {
			return err
		}
		return e.Flush(ctx)
	}
	defer e.flushMu.Unlock()
	// Writes that race the load would land in the memtable and the log,
	// which the ingested tables do not cover: hold commits for its length.
	e.commitMu.Lock()
	defer e.commitMu.Unlock()
	e.mu.RLock()
	empty = e.mem.empty() && e.published == e.appended
	e.mu.RUnlock()
	if !empty {
		return fmt.Errorf("engine: Load raced other writes; retry")
	}
	return e.ingest(ctx, docs)
}

func (e *DB) ingest(ctx context.Context, in []Doc) error {
	// Documents by id, the last of a repeated id winning. Input already in
	// strictly increasing id order (the usual bulk case) is used as it is.
	docs := in
	if !slices.IsSortedFunc(in, func(a, b Doc) int { return cmpU64(a.ID, b.ID) }) || hasRepeat(in) {
		docs = slices.Clone(in)
		slices.SortStableFunc(docs, func(a, b Doc) int { return cmpU64(a.ID, b.ID) })
		w := 0
		for i := range docs {
			if i+1 < len(docs) && docs[i+1].ID == docs[i].ID {
				continue
			}
			docs[w] = docs[i]
			w++
		}
		docs = docs[:w]
	}
	tmp, err := os.MkdirTemp(e.dir, "load-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)
	var paths []string
	var pathsMu sync.Mutex
	newSST := func(name string) (*sstable.Writer, error) {
		path := filepath.Join(tmp, name+".sst")
		f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
		if err != nil {
			return nil, err
		}
		pathsMu.Lock()
		paths = append(paths, path)
		pathsMu.Unlock()
		return sstable.NewWriter(objstorageprovider.NewFileWritable(f), e.popts.MakeWriterOptions(6, pebbleFormat.MaxTableFormat())), nil
	}
	// The documents' fingerprints, in id order: the tables permute and
	// sort them, and drop repeats after sorting (a permutation keeps equal
	// fingerprints equal), so they need not wait for the postings' sort.
	all := make([]uint64, len(docs))
	for i := range docs {
		all[i] = docs[i].Fingerprint
	}
	// Every piece of work is a task on one of GOMAXPROCS slots: the
	// documents in chunks of ids, the postings' sort and then each of its
	// files, each table. Pebble spends as long writing the documents and
	// postings as all the tables take to build; on one goroutine they were
	// the load's critical path, with a core idle at the end.
	procs := runtime.GOMAXPROCS(0)
	p := newTaskPool(ctx, procs)
	chunk := max((len(docs)+4*procs-1)/(4*procs), 1<<16)
	if testDocsPerSST > 0 {
		chunk = testDocsPerSST
	}
	for lo := 0; lo < len(docs); lo += chunk {
		part := docs[lo:min(lo+chunk, len(docs))]
		p.run("loading documents", func() error {
			sw, err := newSST(fmt.Sprintf("docs-%d", lo))
			if err != nil {
				return err
			}
			// The writer copies what it is given, so one key and one value
			// buffer serve every document.
			var kb, vb []byte
			for _, d := range part {
				kb, vb = appendDocKey(kb[:0], d.ID), appendDocValue(vb[:0], d.Fingerprint, d.Name)
				if err := sw.Set(kb, vb); err != nil {
					sw.Close()
					return err
				}
			}
			return sw.Close()
		})
	}
	p.run("loading postings", func() error {
		// Postings order: (fingerprint, id) pairs stably radix-sorted by
		// fingerprint, which keeps id order within a fingerprint. The
		// pairs carry the ids themselves, so the postings are written
		// without reading docs in fingerprint order, a cache miss per
		// document; only names, if there are any, are fetched by index.
		named := slices.ContainsFunc(docs, func(d Doc) bool { return d.Name != "" })
		keys := slices.Clone(all)
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
		// flushes read (see flushMemtable), and a filter block must fit
		// in the cache. Each file is a task of its own.
		perSST := e.postingsPerSST()
		for lo := 0; lo < len(keys); {
			hi := min(lo+perSST, len(keys))
			for hi < len(keys) && keys[hi] == keys[hi-1] {
				hi++
			}
			from := lo
			p.run("loading postings", func() error {
				sw, err := newSST(fmt.Sprintf("postings-%d", from))
				if err != nil {
					return err
				}
				var kb, vb []byte
				for i := from; i < hi; i++ {
					if named {
						d := &docs[order[i]]
						kb, vb = appendPostingKey(kb[:0], keys[i], d.ID), append(vb[:0], d.Name...)
					} else {
						kb, vb = appendPostingKey(kb[:0], keys[i], ids[i]), vb[:0]
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
	})
	// Tables: permute, sort, train, encode.
	type built struct {
		code     *huffman.Code
		keys     []uint64
		sizes    []uint32
		distinct int // fingerprints in the table
	}
	tables := make([]built, len(e.design.Tables))
	// Each table task takes a pair of buffers (the permuted fingerprints
	// and the sort's scratch) that the next table reuses: at 100M, 1.6 GB a
	// table that would otherwise be garbage for the collector to let pile
	// up. There are as many pairs as slots, so a running task always finds
	// one.
	scratch := make(chan *[2][]uint64, procs)
	for range procs {
		scratch <- new([2][]uint64)
	}
	for t := range e.design.Tables {
		p.run(fmt.Sprintf("loading table %d", t), func() error {
			sc := <-scratch
			defer func() { scratch <- sc }()
			b := &tables[t]
			tb := &e.design.Tables[t]
			if sc[0] == nil {
				sc[0], sc[1] = make([]uint64, len(all)), make([]uint64, len(all))
			}
			perm := sc[0][:len(all)]
			for i, fp := range all {
				perm[i] = tb.Permute(fp)
			}
			radix.SortBuf(perm, sc[1])
			perm = slices.Compact(perm)
			b.distinct = len(perm)
			var err error
			if b.code, err = codec.Train(perm); err != nil {
				return err
			}
			tw, err := newSST(fmt.Sprintf("table-%03d", t))
			if err != nil {
				return err
			}
			dw, err := newSST(fmt.Sprintf("dir-%03d", t))
			if err != nil {
				tw.Close()
				return err
			}
			err = codec.Encode(perm, b.code, 1, e.block, func(key uint64, block []byte) error {
				if err := tw.Set(tableKey(spaceTables, t, key), block); err != nil {
					return err
				}
				b.keys = append(b.keys, key)
				b.sizes = append(b.sizes, uint32(len(block)))
				return dw.Set(tableKey(spaceBlockDir, t, key), binary.AppendUvarint(nil, uint64(len(block))))
			})
			return cmp.Or(err, tw.Close(), dw.Close())
		})
	}
	if err := p.wait(); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	fps := tables[0].distinct // the same in every table
	// Metadata: codes and counters, in the same atomic ingestion.
	sw, err := newSST("meta")
	if err != nil {
		return err
	}
	for t := range tables {
		cb, err := tables[t].code.MarshalBinary()
		if err != nil {
			return err
		}
		if err := sw.Set(metaCodeKey(t, 1), cb); err != nil {
			return err
		}
	}
	if err := sw.Set(metaCounts, binary.AppendUvarint(binary.AppendUvarint(nil, uint64(len(docs))), uint64(fps))); err != nil {
		return err
	}
	if err := sw.Close(); err != nil {
		return err
	}
	if err := e.pdb.Ingest(ctx, paths); err != nil {
		return fmt.Errorf("engine: ingesting the loaded tables: %w", err)
	}
	st := &state{tables: make([]tableIndex, len(tables)), codes: make([]codec.CodeMap, len(tables)), curCode: make([]uint32, len(tables)),
		docs: int64(len(docs)), fps: int64(fps), walFrom: e.st.walFrom, snap: e.pdb.NewSnapshot(), iters: make(chan *pebble.Iterator, 8),
		units: newUnitDir(int64(len(docs)))}
	for t, b := range tables {
		st.tables[t] = tableIndex{keys: b.keys, sizes: b.sizes, slots: make([]*slot, len(b.keys))}
		for j := range st.tables[t].slots {
			st.tables[t].slots[j] = new(slot)
		}
		st.tables[t].index()
		st.codes[t] = codec.CodeMap{1: b.code}
		st.curCode[t] = 1
	}
	e.mu.Lock()
	old := e.st
	e.st = st
	budget := e.memtableBudget()
	e.mu.Unlock()
	e.fitWriteRoom(budget)
	return old.close()
}

func hasRepeat(sorted []Doc) bool {
	for i := 1; i < len(sorted); i++ {
		if sorted[i].ID == sorted[i-1].ID {
			return true
		}
	}
	return false
}
