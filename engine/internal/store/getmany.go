package store

import (
	"bytes"
	"fmt"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable/block"
	"github.com/cockroachdb/pebble/v2/sstable/colblk"
	"github.com/cockroachdb/pebble/v2/sstable/valblk"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/engine/internal/uring"
)

// blockRef is data block j of file f.
type blockRef struct {
	f *mappedFile
	j int
}

// blockReads gathers the data blocks a call reads, each once.
type blockReads struct {
	refs  []blockRef
	reads []uring.Read
}

// add returns the place of ref's read, adding it if it is new.
func (b *blockReads) add(ref blockRef) int {
	for x, r := range b.refs { // a block two keys share is read once
		if r == ref {
			return x
		}
	}
	h := ref.f.handle(ref.j)
	b.refs = append(b.refs, ref)
	direct := ref.f.dfd != vfs.InvalidFd
	b.reads = append(b.reads, uring.Read{Fd: ref.f.fd, DirectFd: ref.f.dfd, Direct: direct, Unchecked: direct && !ref.f.checkCache(),
		Off: int64(h.Offset), Len: int(h.Length) + block.TrailerLen})
	return len(b.refs) - 1
}

// release gives back the buffers the blocks were read into, and keeps
// its own room for the next call.
func (b *blockReads) release() {
	for x := range b.reads {
		b.reads[x].Release()
	}
	clear(b.refs) // the files, for the collector
	b.refs, b.reads = b.refs[:0], b.reads[:0]
}

// read reads every block in one submission and checks each: the blocks'
// bytes are then reads[x].P[:Length]. An error is the first read that
// failed or block found damaged.
func (m *blockMap) read(b *blockReads) error {
	if len(b.reads) == 0 {
		return nil
	}
	m.reads.reads.Add(int64(len(b.reads)))
	round := m.reads.rounds.Load() + 1
	if m.ring.ReadMany(b.reads) {
		m.reads.roundDone(round)
	}
	for x, rd := range b.reads {
		f, h := b.refs[x].f, b.refs[x].f.handle(b.refs[x].j)
		if rd.Direct && rd.Err == nil {
			f.readFrom(rd.Cached)
		}
		if rd.Err != nil {
			return fmt.Errorf("engine: reading %s at %d: %w", f.name, h.Offset, rd.Err)
		}
		if err := checkBlock(f, rd.P, h); err != nil {
			return err
		}
	}
	return nil
}

// blockIter iterates over the data blocks a call read.
type blockIter struct {
	m   *blockMap
	dec colblk.DataBlockDecoder
	it  colblk.DataBlockIter
	// at is the read the iterator is on, -1 for none: the keys of one
	// block (a probe's run of table blocks often lies in one) init it
	// once.
	at int
}

// setMap readies bi for m's blocks, once for each map.
func (bi *blockIter) setMap(m *blockMap) {
	if bi.m == m {
		return
	}
	bi.m = m
	// A value in a value block comes as a handle that is never fetched:
	// the key is Pebble's.
	bi.it.InitOnce(m.schema, m.comparer, new(valblk.Reader))
}

// init points the iterator at block x of b.
func (bi *blockIter) init(b *blockReads, x int) error {
	if x == bi.at {
		return nil
	}
	bi.at = -1
	ref := b.refs[x]
	h := ref.f.handle(ref.j)
	bi.dec.Init(bi.m.schema, b.reads[x].P[:h.Length])
	if err := bi.it.Init(&bi.dec, block.NoTransforms); err != nil {
		return corrupt(ref.f, h, err)
	}
	bi.at = x
	return nil
}

// plain reports whether kv is a value in place: the only kind of entry
// the map reads itself.
func plain(k pebble.InternalKeyKind, inPlace bool) bool {
	return (k == pebble.InternalKeyKindSet || k == pebble.InternalKeyKindSetWithDelete) && inPlace
}

// getMany reads keys' values: fn gets each value the map answers, valid
// during the call, and missed lists, in order, the keys it left to Pebble
// (not in a file the map reads, or not a value in place). It reads every
// data block at once. An error is the first read that failed or block
// found damaged.
func (m *blockMap) getMany(keys [][]byte, fn func(i int, v []byte) error) (missed []int, err error) {
	missed, sp, err := m.readMany(Reads{Keys: keys, Get: fn})
	sp.Release()
	return missed, err
}

// scanMany reads the keys in each of spans, [lo, hi) each: fn gets each
// key of span i and its value, in key order, valid during the call, and
// missed lists, in order, the spans it left to Pebble (not all in one file
// the map reads, or holding an entry not a value in place). It reads every
// data block at once. An error is the first read that failed or block
// found damaged.
func (m *blockMap) scanMany(spans [][2][]byte, fn func(i int, k, v []byte) error) (missed []int, err error) {
	_, sp, err := m.readMany(Reads{Spans: spans})
	if err != nil {
		return all(len(spans)), err
	}
	defer sp.Release()
	return sp.Scan(fn)
}

// readMany reads r's keys, as getMany, and the blocks of its spans, in one
// submission; the spans it leaves to the caller's Spans.Scan.
func (m *blockMap) readMany(r Reads) (missedKeys []int, sp *Spans, err error) {
	sp = spansPool.Get().(*Spans)
	sp.m, sp.spans = m, r.Spans
	sp.bi.setMap(m)
	sp.bi.at = -1 // b's reads are this call's
	missedKeys = m.planKeys(&sp.b, r.Keys, &sp.keyAt)
	sp.missed = m.planSpans(&sp.b, r.Spans, &sp.bs, &sp.at)
	if err := m.read(&sp.b); err != nil {
		sp.Release()
		return missedKeys, nil, err
	}
	if missedKeys, err = m.answerKeys(&sp.b, &sp.bi, r.Keys, sp.keyAt, missedKeys, r.Get); err != nil {
		sp.Release()
		return missedKeys, nil, err
	}
	return missedKeys, sp, nil
}

// Spans is the spans of a ReadMany, their blocks read and held until
// Release. A caller that may not need them pays no scan.
//
// Its room (the plan, the blocks' reads, the iterator) is pooled: a cold
// query makes one ReadMany a round, and a dozen allocations for each cost
// it more than the search of its blocks.
type Spans struct {
	m      *blockMap
	b      blockReads // every block the call read, the keys' too
	bi     blockIter
	keyAt  []int // the read of each key, or -1
	spans  [][2][]byte
	bs     []spanBlocks
	at     []int
	missed []int // the spans not located in one file the map reads
}

var spansPool = sync.Pool{New: func() any { return new(Spans) }}

// Scan gives fn the keys of each span and their values, in key order,
// valid during the call, as ScanMany does; missed lists, in order, the
// spans it leaves, for an iterator. An error is a block found damaged, or
// fn's.
func (sp *Spans) Scan(fn func(i int, k, v []byte) error) (missed []int, err error) {
	return sp.m.answerSpans(&sp.b, &sp.bi, sp.spans, sp.bs, sp.at, slices.Clone(sp.missed), fn)
}

// Release gives back the blocks read, and sp with them: call it once, and
// use sp no more. nil does nothing.
func (sp *Spans) Release() {
	if sp == nil {
		return
	}
	sp.b.release()
	sp.spans, sp.missed = nil, nil
	spansPool.Put(sp)
}

// planKeys adds the blocks of keys to b, and sets *at to the read of each
// key, or -1 for the ones missed, which the map leaves to Pebble.
func (m *blockMap) planKeys(b *blockReads, keys [][]byte, at *[]int) (missed []int) {
	*at = slices.Grow((*at)[:0], len(keys))[:len(keys)]
	for i, k := range keys {
		f, j, ok := m.locate(k)
		if !ok {
			(*at)[i] = -1
			missed = append(missed, i)
			continue
		}
		(*at)[i] = b.add(blockRef{f, j})
	}
	return missed
}

// answerKeys gives fn each key's value from the blocks read, adding to
// missed the keys whose newest version is not a value in place.
func (m *blockMap) answerKeys(b *blockReads, bi *blockIter, keys [][]byte, at, missed []int, fn func(i int, v []byte) error) ([]int, error) {
	for i, k := range keys {
		if at[i] < 0 {
			continue
		}
		if err := bi.init(b, at[i]); err != nil {
			return missed, err
		}
		kv := bi.it.SeekGE(k, 0)
		if kv == nil || !bytes.Equal(kv.K.UserKey, k) || !plain(kv.K.Kind(), kv.V.IsInPlaceValue()) {
			missed = append(missed, i)
			continue
		}
		m.served.Add(1)
		if err := fn(i, kv.V.InPlaceValue()); err != nil {
			return missed, err
		}
	}
	slices.Sort(missed)
	return missed, nil
}

// spanBlocks is where a span's reads lie in the plan: at[from:to], or
// from < 0 for a span missed.
type spanBlocks struct{ from, to int }

// planSpans adds the blocks of spans to b, and sets *bs and *at to where
// each span's reads lie.
func (m *blockMap) planSpans(b *blockReads, spans [][2][]byte, bs *[]spanBlocks, at *[]int) (missed []int) {
	*at = (*at)[:0]
	*bs = slices.Grow((*bs)[:0], len(spans))[:len(spans)]
	for i, sp := range spans {
		f, j0, j1, ok := m.locateSpan(sp[0], sp[1])
		if !ok {
			(*bs)[i] = spanBlocks{-1, -1}
			missed = append(missed, i)
			continue
		}
		(*bs)[i].from = len(*at)
		for j := j0; j <= j1; j++ {
			*at = append(*at, b.add(blockRef{f, j}))
		}
		(*bs)[i].to = len(*at)
	}
	return missed
}

// answerSpans gives fn each span's keys and values from the blocks read,
// adding to missed the spans that hold an entry not a value in place.
func (m *blockMap) answerSpans(b *blockReads, bi *blockIter, spans [][2][]byte, bs []spanBlocks, at, missed []int, fn func(i int, k, v []byte) error) ([]int, error) {
	if len(spans) == 0 {
		return missed, nil
	}
	// The keys copied (the iterator's is overwritten by the next), the
	// values where they lie in the blocks read.
	type kv struct {
		k0, k1 int // in keys
		v      []byte
	}
	// Room for a span's keys as a postings unit holds them, reused by
	// each span: grown key by key, they cost a query more than its scan.
	got := make([]kv, 0, 64)
	keys := make([]byte, 0, 64*24)
spans:
	for i, sp := range spans {
		if bs[i].from < 0 {
			continue
		}
		// Checked whole before fn sees any of it: a span is the map's or
		// Pebble's.
		got, keys = got[:0], keys[:0]
		last := -1 // the last key's place in keys
		for _, x := range at[bs[i].from:bs[i].to] {
			if err := bi.init(b, x); err != nil {
				return missed, err
			}
			for e := bi.it.SeekGE(sp[0], 0); e != nil && m.cmp(e.K.UserKey, sp[1]) < 0; e = bi.it.Next() {
				if last >= 0 && bytes.Equal(e.K.UserKey, keys[last:]) {
					continue // an older version
				}
				last = len(keys)
				keys = append(keys, e.K.UserKey...)
				switch k := e.K.Kind(); {
				case k == pebble.InternalKeyKindDelete || k == pebble.InternalKeyKindSingleDelete || k == pebble.InternalKeyKindDeleteSized:
					// Deleted: not there.
				case plain(k, e.V.IsInPlaceValue()):
					got = append(got, kv{last, len(keys), e.V.InPlaceValue()})
				default:
					missed = append(missed, i)
					continue spans
				}
			}
		}
		m.served.Add(int64(len(got)))
		for _, e := range got {
			if err := fn(i, keys[e.k0:e.k1], e.v); err != nil {
				return missed, err
			}
		}
	}
	slices.Sort(missed)
	return missed, nil
}
