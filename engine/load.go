package engine

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/huffman"
)

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
	// Postings order: documents stably radix-sorted by fingerprint, which
	// keeps id order within a fingerprint.
	keys := make([]uint64, len(docs))
	order := make([]uint32, len(docs))
	for i := range docs {
		keys[i], order[i] = docs[i].Fingerprint, uint32(i)
	}
	radixSortPairs(keys, order)
	fps := slices.Compact(keys) // distinct fingerprints, ascending
	// Documents and postings are written on one goroutine while the tables
	// are built on the others.
	docsErr := make(chan error, 1)
	go func() {
		docsErr <- func() error {
			sw, err := newSST("docs")
			if err != nil {
				return err
			}
			for _, d := range docs {
				if err := sw.Set(docKey(d.ID), docValue(d.Fingerprint, d.Name)); err != nil {
					sw.Close()
					return err
				}
			}
			if err := sw.Close(); err != nil {
				return err
			}
			if sw, err = newSST("postings"); err != nil {
				return err
			}
			for _, i := range order {
				d := &docs[i]
				if err := sw.Set(postingKey(d.Fingerprint, d.ID), []byte(d.Name)); err != nil {
					sw.Close()
					return err
				}
			}
			return sw.Close()
		}()
	}()
	if err := ctx.Err(); err != nil {
		<-docsErr
		return err
	}
	// Tables, two at a time on two cores: permute, sort, train, encode.
	type built struct {
		code  *huffman.Code
		keys  []uint64
		sizes []uint32
		err   error
	}
	tables := make([]built, len(e.design.Tables))
	var wg sync.WaitGroup
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	for t := range e.design.Tables {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			b := &tables[t]
			tb := &e.design.Tables[t]
			perm := make([]uint64, len(fps))
			for i, fp := range fps {
				perm[i] = tb.Permute(fp)
			}
			radixSort(perm)
			if b.code, b.err = codec.Train(perm); b.err != nil {
				return
			}
			tw, err := newSST(fmt.Sprintf("table-%03d", t))
			var dw *sstable.Writer
			if err == nil {
				dw, err = newSST(fmt.Sprintf("dir-%03d", t))
			}
			if err != nil {
				b.err = err
				return
			}
			b.err = codec.Encode(perm, b.code, 1, e.block, func(key uint64, block []byte) error {
				if err := tw.Set(tableKey(spaceTables, t, key), block); err != nil {
					return err
				}
				b.keys = append(b.keys, key)
				b.sizes = append(b.sizes, uint32(len(block)))
				return dw.Set(tableKey(spaceBlockDir, t, key), binary.AppendUvarint(nil, uint64(len(block))))
			})
			if err := tw.Close(); b.err == nil {
				b.err = err
			}
			if err := dw.Close(); b.err == nil {
				b.err = err
			}
		}()
	}
	wg.Wait()
	if err := <-docsErr; err != nil {
		return fmt.Errorf("engine: loading documents: %w", err)
	}
	for t := range tables {
		if tables[t].err != nil {
			return fmt.Errorf("engine: loading table %d: %w", t, tables[t].err)
		}
	}
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
	if err := sw.Set(metaCounts, binary.AppendUvarint(binary.AppendUvarint(nil, uint64(len(docs))), uint64(len(fps)))); err != nil {
		return err
	}
	if err := sw.Close(); err != nil {
		return err
	}
	if err := e.pdb.Ingest(ctx, paths); err != nil {
		return fmt.Errorf("engine: ingesting the loaded tables: %w", err)
	}
	st := &state{tables: make([]tableIndex, len(tables)), codes: make([]codec.CodeMap, len(tables)), curCode: make([]uint32, len(tables)),
		docs: int64(len(docs)), fps: int64(len(fps)), walFrom: e.st.walFrom, snap: e.pdb.NewSnapshot()}
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
	e.mu.Unlock()
	return old.snap.Close()
}

func hasRepeat(sorted []Doc) bool {
	for i := 1; i < len(sorted); i++ {
		if sorted[i].ID == sorted[i-1].ID {
			return true
		}
	}
	return false
}

// radixSortPairs sorts keys in place, least significant byte first, and
// moves vals along; it is stable.
func radixSortPairs(keys []uint64, vals []uint32) {
	if len(keys) < 2 {
		return
	}
	kb, vb := make([]uint64, len(keys)), make([]uint32, len(vals))
	sk, sv, dk, dv := keys, vals, kb, vb
	for shift := uint(0); shift < 64; shift += 8 {
		var count [256]int
		for _, k := range sk {
			count[byte(k>>shift)]++
		}
		if count[byte(sk[0]>>shift)] == len(sk) {
			continue
		}
		pos := 0
		for i, c := range count {
			count[i] = pos
			pos += c
		}
		for i, k := range sk {
			b := byte(k >> shift)
			dk[count[b]], dv[count[b]] = k, sv[i]
			count[b]++
		}
		sk, sv, dk, dv = dk, dv, sk, sv
	}
	if &sk[0] != &keys[0] {
		copy(keys, sk)
		copy(vals, sv)
	}
}

// radixSort sorts x in place, least significant byte first, in eight passes
// (several times faster than a comparison sort at millions of keys).
func radixSort(x []uint64) {
	if len(x) < 1<<12 {
		slices.Sort(x)
		return
	}
	buf := make([]uint64, len(x))
	src, dst := x, buf
	for shift := uint(0); shift < 64; shift += 8 {
		var count [256]int
		for _, v := range src {
			count[byte(v>>shift)]++
		}
		if count[byte(src[0]>>shift)] == len(src) {
			continue // every key shares this byte
		}
		pos := 0
		for i, c := range count {
			count[i] = pos
			pos += c
		}
		for _, v := range src {
			b := byte(v >> shift)
			dst[count[b]] = v
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &x[0] {
		copy(x, src)
	}
}
