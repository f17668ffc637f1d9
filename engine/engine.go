package engine

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math/bits"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/huffman"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/wal"
)

// pebbleFormat pins Pebble's on-disk format: the newest named version of
// pebble/v2.1 (Pebble's default is an old row format).
const pebbleFormat = pebble.FormatValueSeparation

// Doc is a stored document.
type Doc struct {
	ID          uint64
	Fingerprint uint64
	// Name is optional (a URL, a path), at most MaxName bytes.
	Name string
}

// Match is a document found by a query.
type Match struct {
	Doc
	Distance int
}

// reader is what queries read from: a Pebble snapshot.
type reader interface {
	Get(key []byte) ([]byte, io.Closer, error)
	NewIter(o *pebble.IterOptions) (*pebble.Iterator, error)
}

// tableIndex is the in-memory directory of one table's blocks.
type tableIndex struct {
	keys  []uint64 // last permuted fingerprint of each block, ascending
	sizes []uint32
	// pend counts each block's pending fingerprints: added by flushes but
	// not yet merged into the block, kept beside it (spacePending) so that
	// a flush rewrites a whole block only once it has gathered pendingMax
	// of them. A block covers (keys[j-1], keys[j]], the last one also
	// what lies above its key; readers see the block and its pending list
	// merged. Nil when no block has any.
	pend  []uint16
	slots []*slot // the blocks' cache slots
	// radix[b] is the first block whose key is >= b << shift: a probe
	// binary-searches only between radix[b] and radix[b+1], a block or two,
	// instead of the whole directory (whose misses cost more than the rest
	// of a warm probe).
	radix []uint32
	shift uint
}

// index builds the radix directory over keys, about four entries a block.
func (ti *tableIndex) index() {
	bitsN := 1
	for 1<<bitsN < 4*len(ti.keys) && bitsN < 24 {
		bitsN++
	}
	ti.shift = uint(64 - bitsN)
	ti.radix = make([]uint32, 1<<bitsN+1)
	j := 0
	for b := range 1 << bitsN {
		for j < len(ti.keys) && ti.keys[j]>>ti.shift < uint64(b) {
			j++
		}
		ti.radix[b] = uint32(j)
	}
	ti.radix[1<<bitsN] = uint32(len(ti.keys))
}

// find returns the first block whose key is >= v (len(keys) if none).
// start returns the first block a probe of the range from lo must read:
// find's, or the last block when lo lies above every key and that block's
// pending list may hold values there.
func (ti *tableIndex) start(lo uint64) int {
	j := ti.find(lo)
	if j == len(ti.keys) && j > 0 && ti.pending(j-1) > 0 {
		j--
	}
	return j
}

// pending returns block j's pending count.
func (ti *tableIndex) pending(j int) int {
	if ti.pend == nil {
		return 0
	}
	return int(ti.pend[j])
}

// pendingAt is pending for any j, 0 outside the directory.
func (ti *tableIndex) pendingAt(j int) int {
	if j < 0 || j >= len(ti.keys) {
		return 0
	}
	return ti.pending(j)
}

func (ti *tableIndex) find(v uint64) int {
	b := v >> ti.shift
	lo, hi := int(ti.radix[b]), int(ti.radix[b+1])
	if hi-lo > 8 { // a crowded bucket (clustered fingerprints)
		j, _ := slices.BinarySearch(ti.keys[lo:hi], v)
		return lo + j
	}
	for lo < hi && ti.keys[lo] < v {
		lo++
	}
	return lo
}

// lowerBound returns the first i with fps[i] >= v in a sorted block,
// guessing by interpolation and walking from there: entries of a block are
// spread evenly enough that the walk is short, and it reads memory in order.
func lowerBound(fps []uint64, v uint64) int { return walk(fps, v, guess(fps, v)) }

// guess is lowerBound's first step: where v would be if fps were spread
// evenly between its ends. It reads only the ends.
func guess(fps []uint64, v uint64) int {
	n := len(fps)
	if n == 0 || v <= fps[0] {
		return 0
	}
	if v > fps[n-1] {
		return n
	}
	step := (fps[n-1]-fps[0])/uint64(n) + 1
	return min(int((v-fps[0])/step), n-1)
}

// walk is lowerBound's second step: from guess i, the first i with fps[i]
// >= v. guess returns len(fps) when v is above the last entry, so below
// that the walk up stops within fps.
func walk(fps []uint64, v uint64, i int) int {
	if i == len(fps) {
		return i
	}
	for i > 0 && fps[i-1] >= v {
		i--
	}
	for fps[i] < v {
		i++
	}
	return i
}

// state is what queries see of Pebble: a snapshot and the block directory
// and codes that describe it. A flush replaces it whole.
type state struct {
	snap    *pebble.Snapshot
	tables  []tableIndex
	codes   []codec.CodeMap
	curCode []uint32 // per table; 0 = none yet
	docs    int64
	fps     int64
	walFrom uint64
	units   *unitDir // the postings' units in the cache
	// iters keeps postings iterators on snap for reuse: opening one costs
	// about as much as the seek a match needs (a third of a warm query).
	iters chan *pebble.Iterator
}

// postingsIter returns an iterator over st's postings, reused if one is
// free.
func (st *state) postingsIter() (*pebble.Iterator, error) {
	select {
	case it := <-st.iters:
		return it, nil
	default:
		return st.snap.NewIter(&pebble.IterOptions{LowerBound: []byte{spacePostings}, UpperBound: []byte{spacePostings + 1}})
	}
}

// release gives an iterator from postingsIter back.
func (st *state) release(it *pebble.Iterator) {
	if it == nil {
		return
	}
	select {
	case st.iters <- it:
	default:
		it.Close()
	}
}

// close closes the state's free iterators and its snapshot; no query may
// use it any more.
func (st *state) close() error {
	for {
		select {
		case it := <-st.iters:
			it.Close()
		default:
			return st.snap.Close()
		}
	}
}

// DB is an open index. Its methods are safe for concurrent use.
type DB struct {
	dir   string
	opts  Options
	log   *slog.Logger
	pdb   *pebble.DB
	popts *pebble.Options
	// prefixSeek: the store orders keys with keyOrder (see seekPostings).
	prefixSeek bool
	// pebbleCache is the size of Pebble's block cache, besides its write
	// room (see writeRoom).
	pebbleCache int64
	pcache      *pebble.Cache
	roomMu      sync.Mutex
	roomMax     int64    // the write room for the largest memtable budget
	roomFree    func()   // releases the part of roomMax not needed now
	wal         *wal.Log // nil when read-only
	design      *permutation.Design
	block       int
	cache       *blockCache

	mu        sync.RWMutex
	cond      *sync.Cond // on mu: publication order, stalls, flush completion
	st        *state
	mem, imm  *memtable
	immSeg    uint64 // WAL segment that starts after imm's records
	published uint64 // sequence number of the last write applied to mem
	closed    bool
	bgErr     error // a failed background flush

	commitMu sync.Mutex // orders WAL appends and sequence numbers
	appended uint64
	dedupMu  sync.Mutex // serialises InsertIfNew
	flushMu  sync.Mutex // one flush (or check) at a time

	flushCh chan struct{}
	quit    chan struct{}
	bg      sync.WaitGroup
}

// Open opens the index in dir, creating it unless opts.ReadOnly.
func Open(dir string, opts Options) (*DB, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	pdir := filepath.Join(dir, "pebble")
	if _, err := os.Stat(pdir); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if opts.ReadOnly {
			return nil, fmt.Errorf("engine: no index in %s: %w", dir, err)
		}
	}
	e := &DB{dir: dir, opts: opts, log: opts.Logger, block: opts.BlockSize,
		flushCh: make(chan struct{}, 1), quit: make(chan struct{})}
	e.cond = sync.NewCond(&e.mu)
	order, err := storedOrder(pdir)
	if err != nil {
		return nil, err
	}
	e.prefixSeek = order == keyOrder
	pebbleCache := max(opts.CacheSize/8, 8<<20)
	e.cache = newBlockCache(max(opts.CacheSize-pebbleCache, 1<<20))
	e.pebbleCache = pebbleCache
	if !opts.ReadOnly {
		e.roomMax = writeRoom(opts.maxMemtableBudget())
	}
	e.pcache = pebble.NewCache(pebbleCache + e.roomMax)
	e.fitWriteRoom(opts.MemtableSize)
	po := &pebble.Options{Cache: e.pcache, Comparer: order, FormatMajorVersion: pebbleFormat, ReadOnly: opts.ReadOnly,
		Logger: pebbleLogger{opts.Logger}}
	// Table blocks are Huffman-coded already and the other keys are mostly
	// random 64-bit numbers: Pebble's compression would cost CPU for little.
	po.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	po.EnsureDefaults()
	e.popts = po
	if e.pdb, err = pebble.Open(pdir, po); err != nil {
		e.releaseCache()
		return nil, fmt.Errorf("engine: opening %s: %w", pdir, err)
	}
	if err := e.load(); err != nil {
		e.pdb.Close()
		e.releaseCache()
		return nil, err
	}
	e.fitWriteRoom(e.memtableBudget())
	e.mem = newMemtable(e.design)
	walDir := filepath.Join(dir, "wal")
	if !opts.ReadOnly {
		// Open the log first: it starts a new segment after the ones replayed.
		if e.wal, err = wal.Open(walDir, wal.Options{Sync: opts.Sync, Interval: opts.SyncInterval}); err != nil {
			e.close()
			return nil, fmt.Errorf("engine: %w", err)
		}
	}
	rs, err := wal.Replay(walDir, e.st.walFrom, opts.ReadOnly, e.replayRecord)
	if err != nil {
		e.close()
		return nil, fmt.Errorf("engine: replaying the write-ahead log: %w", err)
	}
	if rs.Records > 0 || rs.Trimmed > 0 {
		e.log.Info("simhashdb: replayed the write-ahead log", "dir", walDir, "segments", rs.Segments,
			"records", rs.Records, "documents", len(e.mem.docs), "torn_tail_bytes", rs.Trimmed)
	}
	if !opts.ReadOnly {
		e.bg.Add(1)
		go e.flusher()
		if e.mem.size >= e.memtableBudget() {
			e.signalFlush()
		}
	}
	return e, nil
}

// newStoreOrder is the comparer of new stores; tests set Pebble's default
// to make the stores of earlier builds.
var newStoreOrder = keyOrder

// storedOrder returns the comparer of the Pebble store in pdir: keyOrder for
// a new store and one created with it, Pebble's default for one created
// before keyOrder was added.
func storedOrder(pdir string) (*pebble.Comparer, error) {
	desc, err := pebble.Peek(pdir, vfs.Default)
	if errors.Is(err, os.ErrNotExist) {
		return newStoreOrder, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: reading %s: %w", pdir, err)
	}
	if !desc.Exists || desc.OptionsFilename == "" {
		return newStoreOrder, nil // new, or Pebble reports what is missing
	}
	text, err := os.ReadFile(desc.OptionsFilename)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	var stored pebble.Options
	err = stored.Parse(string(text), &pebble.ParseHooks{
		NewComparer: func(name string) (*pebble.Comparer, error) {
			if name == keyOrder.Name {
				return keyOrder, nil
			}
			return nil, fmt.Errorf("%w: %s: unknown key order %q", ErrCorrupt, desc.OptionsFilename, name)
		},
		SkipUnknown: func(string, string) bool { return true },
	})
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if stored.Comparer == keyOrder {
		return keyOrder, nil
	}
	return pebble.DefaultComparer, nil
}

// seekPostings positions it at the first posting of fp, if any: a prefix
// seek where the bloom filters hold fingerprints (keyOrder).
func (e *DB) seekPostings(it *pebble.Iterator, fp uint64) bool {
	if e.prefixSeek {
		return it.SeekPrefixGE(postingPrefix(fp))
	}
	return it.SeekGE(postingPrefix(fp))
}

// load reads (or, for a new index, writes) the metadata, the block
// directory and the codes.
func (e *DB) load() error {
	get := func(k []byte) ([]byte, bool, error) {
		v, c, err := e.pdb.Get(k)
		if errors.Is(err, pebble.ErrNotFound) {
			return nil, false, nil
		}
		if err != nil {
			return nil, false, err
		}
		defer c.Close()
		return slices.Clone(v), true, nil
	}
	fv, ok, err := get(metaFormat)
	if err != nil {
		return err
	}
	if !ok {
		if e.opts.ReadOnly {
			return fmt.Errorf("engine: %s holds no simhashdb index", e.dir)
		}
		if err := e.create(); err != nil {
			return err
		}
		fv, _, _ = get(metaFormat)
	}
	if len(fv) != 4 || binary.BigEndian.Uint32(fv) < 1 || binary.BigEndian.Uint32(fv) > formatVersion {
		return fmt.Errorf("%w: %s: format version %x, this build reads 1..%d", ErrCorrupt, e.dir, fv, formatVersion)
	}
	dv, _, err := get(metaDesign)
	if err != nil {
		return err
	}
	e.design = new(permutation.Design)
	if err := e.design.UnmarshalBinary(dv); err != nil {
		return fmt.Errorf("%w: %s: stored table design: %w", ErrCorrupt, e.dir, err)
	}
	if e.opts.K != DefaultK || e.opts.Design != nil {
		// Options that name a K or design must agree with the index.
		if e.opts.Design != nil && !sameDesign(e.opts.Design, e.design) {
			return fmt.Errorf("%w: %s was built with a different table design (K = %d, %d tables)", ErrOptions, e.dir, e.design.K, len(e.design.Tables))
		}
		if e.opts.K != e.design.K {
			return fmt.Errorf("%w: %s was built for K = %d, opened with K = %d", ErrOptions, e.dir, e.design.K, e.opts.K)
		}
	}
	bv, _, err := get(metaBlock)
	if err != nil {
		return err
	}
	bs, n := binary.Uvarint(bv)
	if n <= 0 || bs < codec.MinBlockSize || bs > codec.MaxBlockSize {
		return fmt.Errorf("%w: %s: stored block size", ErrCorrupt, e.dir)
	}
	if e.opts.BlockSize != codec.DefaultBlockSize && e.opts.BlockSize != int(bs) {
		return fmt.Errorf("%w: %s was built with %d-byte blocks, opened with %d", ErrOptions, e.dir, bs, e.opts.BlockSize)
	}
	e.block = int(bs)
	st := &state{tables: make([]tableIndex, len(e.design.Tables)), codes: make([]codec.CodeMap, len(e.design.Tables)),
		curCode: make([]uint32, len(e.design.Tables))}
	wv, _, err := get(metaWALFrom)
	if err != nil {
		return err
	}
	if st.walFrom, n = binary.Uvarint(wv); n <= 0 {
		return fmt.Errorf("%w: %s: stored WAL position", ErrCorrupt, e.dir)
	}
	cv, _, err := get(metaCounts)
	if err != nil {
		return err
	}
	docs, n1 := binary.Uvarint(cv)
	fps, n2 := binary.Uvarint(cv[max(n1, 0):])
	if n1 <= 0 || n2 <= 0 {
		return fmt.Errorf("%w: %s: stored counters", ErrCorrupt, e.dir)
	}
	st.docs, st.fps = int64(docs), int64(fps)
	st.units = newUnitDir(st.docs)
	for i := range st.codes {
		st.codes[i] = codec.CodeMap{}
	}
	if err := e.scan([]byte{spaceMeta, 'c'}, func(k, v []byte) error {
		if len(k) != 7 || int(k[2]) >= len(st.codes) {
			return fmt.Errorf("%w: metadata key %x", ErrCorrupt, k)
		}
		t, id := int(k[2]), binary.BigEndian.Uint32(k[3:])
		c, err := huffman.Unmarshal(v)
		if err != nil {
			return fmt.Errorf("%w: table %d code %d: %w", ErrCorrupt, t, id, err)
		}
		st.codes[t][id] = c
		st.curCode[t] = max(st.curCode[t], id)
		return nil
	}); err != nil {
		return err
	}
	if err := e.scan([]byte{spaceBlockDir}, func(k, v []byte) error {
		if len(k) != 10 || int(k[1]) >= len(st.tables) {
			return fmt.Errorf("%w: block directory key %x", ErrCorrupt, k)
		}
		// The size, and in a version 2 index a pending count, which the
		// pending lists below give.
		size, n := binary.Uvarint(v)
		m := 0
		if n > 0 && n < len(v) {
			_, m = binary.Uvarint(v[n:])
		}
		if n <= 0 || m < 0 || n+m != len(v) {
			return fmt.Errorf("%w: block directory entry %x", ErrCorrupt, k)
		}
		ti := &st.tables[k[1]]
		ti.keys = append(ti.keys, binary.BigEndian.Uint64(k[2:]))
		ti.sizes = append(ti.sizes, uint32(size))
		ti.slots = append(ti.slots, new(slot))
		return nil
	}); err != nil {
		return err
	}
	// Pending counts: a flush appends to a list without rewriting its
	// block's directory entry.
	if err := e.scan([]byte{spacePending}, func(k, v []byte) error {
		if len(k) != 10 || int(k[1]) >= len(st.tables) {
			return fmt.Errorf("%w: pending list key %x", ErrCorrupt, k)
		}
		t, key := int(k[1]), binary.BigEndian.Uint64(k[2:])
		ti := &st.tables[t]
		j, found := slices.BinarySearch(ti.keys, key)
		if !found {
			return fmt.Errorf("%w: table %d: a pending list for block %016x, which the directory does not have", ErrCorrupt, t, key)
		}
		n := 0
		if _, err := scanPending(v, pendingMax, func(uint64) { n++ }); err != nil {
			// Open anyway, as with a damaged block: reading this one (a
			// query, a flush, Check) reports the damage with its place.
			e.log.Warn("simhashdb: damaged pending list", "table", t, "block", fmt.Sprintf("%016x", key), "err", err)
			n = pendingDamaged
		}
		if ti.pend == nil {
			ti.pend = make([]uint16, len(ti.keys))
		}
		ti.pend[j] = uint16(n)
		return nil
	}); err != nil {
		return err
	}
	for t := range st.tables {
		st.tables[t].index()
	}
	st.snap, st.iters = e.pdb.NewSnapshot(), make(chan *pebble.Iterator, 8)
	e.st = st
	return nil
}

func sameDesign(a, b *permutation.Design) bool {
	x, err1 := a.MarshalBinary()
	y, err2 := b.MarshalBinary()
	return err1 == nil && err2 == nil && slices.Equal(x, y)
}

// create writes the metadata of a new index.
func (e *DB) create() error {
	d, err := e.opts.design()
	if err != nil {
		return err
	}
	if len(d.Tables) > 255 {
		return fmt.Errorf("%w: %d tables, at most 255", ErrOptions, len(d.Tables))
	}
	db, err := d.MarshalBinary()
	if err != nil {
		return err
	}
	b := e.pdb.NewBatch()
	defer b.Close()
	b.Set(metaFormat, binary.BigEndian.AppendUint32(nil, formatVersion), nil)
	b.Set(metaDesign, db, nil)
	b.Set(metaBlock, binary.AppendUvarint(nil, uint64(e.opts.BlockSize)), nil)
	b.Set(metaWALFrom, binary.AppendUvarint(nil, 1), nil)
	b.Set(metaCounts, []byte{0, 0}, nil)
	e.log.Info("simhashdb: created index", "dir", e.dir, "k", d.K, "tables", len(d.Tables), "min_prefix", d.MinPrefix())
	return b.Commit(pebble.Sync)
}

// scan calls fn for every key with the prefix p in the live database.
func (e *DB) scan(p []byte, fn func(k, v []byte) error) error {
	return scanReader(e.pdb, p, fn)
}

func scanReader(r reader, p []byte, fn func(k, v []byte) error) error {
	it, err := r.NewIter(&pebble.IterOptions{LowerBound: p, UpperBound: prefixEnd(p)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.ValueAndErr()
		if err != nil {
			it.Close()
			return err
		}
		if err := fn(it.Key(), v); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}

// Design returns the index's table design.
func (e *DB) Design() *permutation.Design { return e.design }

// K returns the largest distance the index answers.
func (e *DB) K() int { return e.design.K }

// Close makes every acknowledged write durable and releases the index. The
// memtable is not flushed: the next Open replays the log.
func (e *DB) Close() error {
	e.commitMu.Lock()
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		e.commitMu.Unlock()
		return ErrClosed
	}
	e.closed = true
	e.cond.Broadcast()
	e.mu.Unlock()
	e.commitMu.Unlock()
	close(e.quit)
	e.bg.Wait()
	e.flushMu.Lock() // a Flush called by a user may still run
	defer e.flushMu.Unlock()
	return e.close()
}

func (e *DB) close() error {
	var errs []error
	if e.wal != nil {
		errs = append(errs, e.wal.Close())
	}
	if e.st != nil && e.st.snap != nil {
		errs = append(errs, e.st.close())
	}
	errs = append(errs, e.pdb.Close())
	e.releaseCache()
	return errors.Join(errs...)
}

// writeRoom is the part of Pebble's cache that Pebble's writes take for a
// memtable budget: Pebble reserves its memtables (two of 4 MiB by default)
// from the cache, and a flush's batch, which is larger than its memtables,
// until it has written the batch to an sstable. A flush's batch was up to
// 0.6 times the memtable it came from, and a memtable reaches twice its
// budget while the one before it is flushed (stall); two batches may wait
// at once. Without this room a flush's batch took all of a small cache,
// and every block read, bloom filters too, missed the cache until Pebble
// had written it: online inserts into an index growing past 2M documents
// with the default CacheSize fell from 147 K/s (before the bloom
// filters) to 20 K/s.
func writeRoom(budget int64) int64 { return 2*budget + 8<<20 }

// fitWriteRoom leaves the write room of a memtable budget in Pebble's cache,
// whose size is pebbleCache and the largest write room: it reserves the
// rest, which holds no blocks then.
func (e *DB) fitWriteRoom(budget int64) {
	e.roomMu.Lock()
	defer e.roomMu.Unlock()
	if e.roomFree != nil {
		e.roomFree()
	}
	e.roomFree = e.pcache.Reserve(int(max(e.roomMax-writeRoom(budget), 0)))
}

// releaseCache drops the engine's reservation and reference on Pebble's
// cache.
func (e *DB) releaseCache() {
	e.roomMu.Lock()
	defer e.roomMu.Unlock()
	if e.roomFree != nil {
		e.roomFree()
		e.roomFree = nil
	}
	e.pcache.Unref()
}

// WAL record types.
const recOps = 1

// op kinds in a WAL record.
const (
	opInsert = 1
	opDelete = 2
)

func encodeOps(docs []Doc, deletes []uint64) []byte {
	size := 10
	for _, d := range docs {
		size += 1 + 16 + 2 + len(d.Name)
	}
	b := make([]byte, 0, size+9*len(deletes))
	b = binary.AppendUvarint(b, uint64(len(docs)+len(deletes)))
	for _, d := range docs {
		b = append(b, opInsert)
		b = binary.BigEndian.AppendUint64(b, d.ID)
		b = binary.BigEndian.AppendUint64(b, d.Fingerprint)
		b = binary.AppendUvarint(b, uint64(len(d.Name)))
		b = append(b, d.Name...)
	}
	for _, id := range deletes {
		b = append(b, opDelete)
		b = binary.BigEndian.AppendUint64(b, id)
	}
	return b
}

// decodeOps calls fn for each op of a WAL record.
func decodeOps(b []byte, fn func(del bool, d Doc)) error {
	n, k := binary.Uvarint(b)
	if k <= 0 || n > uint64(len(b)) {
		return errors.New("bad op count")
	}
	b = b[k:]
	for i := range n {
		if len(b) < 9 {
			return fmt.Errorf("op %d truncated", i)
		}
		kind, id := b[0], binary.BigEndian.Uint64(b[1:])
		b = b[9:]
		switch kind {
		case opDelete:
			fn(true, Doc{ID: id})
		case opInsert:
			if len(b) < 8 {
				return fmt.Errorf("op %d truncated", i)
			}
			fp := binary.BigEndian.Uint64(b)
			l, k := binary.Uvarint(b[8:])
			if k <= 0 || l > MaxName || uint64(len(b)-8-k) < l {
				return fmt.Errorf("op %d: bad name", i)
			}
			fn(false, Doc{ID: id, Fingerprint: fp, Name: string(b[8+k : 8+k+int(l)])})
			b = b[8+k+int(l):]
		default:
			return fmt.Errorf("op %d: unknown kind %d", i, kind)
		}
	}
	if len(b) != 0 {
		return fmt.Errorf("%d bytes after the last op", len(b))
	}
	return nil
}

func (m *memtable) applyRecord(payload []byte) error {
	return decodeOps(payload, func(del bool, d Doc) {
		if del {
			m.delete(d.ID)
		} else {
			m.insert(d)
		}
	})
}

func (e *DB) replayRecord(typ byte, payload []byte) error {
	if typ != recOps {
		return fmt.Errorf("unknown record type %d", typ)
	}
	return e.mem.applyRecord(payload)
}

// Insert stores a document, replacing any with the same id. It returns once
// the write is durable as Options.Sync promises; it is visible to queries
// from then on.
func (e *DB) Insert(ctx context.Context, d Doc) error {
	return e.write(ctx, []Doc{d}, nil)
}

// InsertBatch stores many documents with one log record: one commit.
func (e *DB) InsertBatch(ctx context.Context, docs []Doc) error {
	return e.write(ctx, docs, nil)
}

// Delete removes documents by id; ids that are not stored are ignored.
func (e *DB) Delete(ctx context.Context, ids ...uint64) error {
	return e.write(ctx, nil, ids)
}

// maxOps bounds the writes of one commit so a record stays well under the
// log's limit.
const maxOps = 1 << 18

func (e *DB) write(ctx context.Context, docs []Doc, deletes []uint64) error {
	if e.opts.ReadOnly {
		return ErrReadOnly
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	for len(docs)+len(deletes) > maxOps { // split huge batches into records
		n := min(len(docs), maxOps)
		if err := e.write(ctx, docs[:n], deletes[:min(len(deletes), maxOps-n)]); err != nil {
			return err
		}
		docs, deletes = docs[n:], deletes[min(len(deletes), maxOps-n):]
	}
	for i := range docs {
		if len(docs[i].Name) > MaxName {
			return fmt.Errorf("%w: document %d: name of %d bytes, at most %d", ErrInput, docs[i].ID, len(docs[i].Name), MaxName)
		}
	}
	if len(docs)+len(deletes) == 0 {
		return nil
	}
	payload := encodeOps(docs, deletes)
	if err := e.stall(); err != nil {
		return err
	}
	e.commitMu.Lock()
	e.mu.RLock()
	closed := e.closed
	e.mu.RUnlock()
	if closed {
		e.commitMu.Unlock()
		return ErrClosed
	}
	lsn, err := e.wal.Append(recOps, payload)
	if err != nil {
		e.commitMu.Unlock()
		return fmt.Errorf("engine: %w", err)
	}
	e.appended++
	seq := e.appended
	e.commitMu.Unlock()
	werr := e.wal.Wait(ctx, lsn)
	// Publish even when waiting failed: the record is in the log, and the
	// memtable must follow the log's order.
	e.mu.Lock()
	for e.published != seq-1 {
		e.cond.Wait()
	}
	for _, d := range docs {
		e.mem.insert(d)
	}
	for _, id := range deletes {
		e.mem.delete(id)
	}
	e.published = seq
	e.cond.Broadcast()
	full := e.mem.size >= e.memtableBudget()
	e.mu.Unlock()
	if full {
		e.signalFlush()
	}
	if werr != nil {
		return fmt.Errorf("engine: %w", werr)
	}
	return nil
}

// memtableBudget is the memtable size that triggers a flush now; e.mu or
// flushMu is held (e.st is replaced under both).
func (e *DB) memtableBudget() int64 { return e.opts.memtableBudget(e.st.fps) }

// stall holds a writer back while the memtable is twice its budget and the
// previous one is still being flushed.
func (e *DB) stall() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	for e.imm != nil && e.mem.size >= 2*e.memtableBudget() && e.bgErr == nil && !e.closed {
		e.cond.Wait()
	}
	if e.closed {
		return ErrClosed
	}
	return e.bgErr
}

func (e *DB) signalFlush() {
	select {
	case e.flushCh <- struct{}{}:
	default:
	}
}

func (e *DB) flusher() {
	defer e.bg.Done()
	for {
		select {
		case <-e.quit:
			return
		case <-e.flushCh:
			if err := e.flush(); err != nil {
				if errors.Is(err, ErrClosed) {
					return
				}
				e.log.Error("simhashdb: flush failed", "err", err)
				e.mu.Lock()
				e.bgErr = fmt.Errorf("engine: background flush: %w", err)
				e.cond.Broadcast()
				e.mu.Unlock()
				return
			}
		}
	}
}

// Get returns the document with the id, or ErrNotFound.
func (e *DB) Get(ctx context.Context, id uint64) (Doc, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return Doc{}, ErrClosed
	}
	for _, m := range []*memtable{e.mem, e.imm} {
		if m == nil {
			continue
		}
		if d, ok := m.docs[id]; ok {
			if !d.live {
				return Doc{}, fmt.Errorf("%w: document %d", ErrNotFound, id)
			}
			return Doc{ID: id, Fingerprint: d.fp, Name: d.name}, nil
		}
	}
	v, c, err := e.st.snap.Get(docKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return Doc{}, fmt.Errorf("%w: document %d", ErrNotFound, id)
	}
	if err != nil {
		return Doc{}, err
	}
	defer c.Close()
	if len(v) < 8 {
		return Doc{}, fmt.Errorf("%w: document %d: value of %d bytes", ErrCorrupt, id, len(v))
	}
	return Doc{ID: id, Fingerprint: binary.BigEndian.Uint64(v), Name: string(v[8:])}, nil
}

// NextID returns one more than the largest id stored (1 for an empty
// index): where a caller that numbers its documents itself can go on.
func (e *DB) NextID(ctx context.Context) (uint64, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return 0, ErrClosed
	}
	var top uint64
	for _, m := range []*memtable{e.mem, e.imm} {
		if m == nil {
			continue
		}
		for id, d := range m.docs {
			if d.live {
				top = max(top, id)
			}
		}
	}
	it, err := e.st.snap.NewIter(&pebble.IterOptions{LowerBound: []byte{spaceDocs}, UpperBound: []byte{spaceDocs + 1}})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	for ok := it.Last(); ok; ok = it.Prev() {
		id := binary.BigEndian.Uint64(it.Key()[1:])
		if !e.hidden(id) {
			top = max(top, id)
			break
		}
	}
	if err := it.Error(); err != nil {
		return 0, err
	}
	if top == ^uint64(0) {
		return 0, fmt.Errorf("%w: the largest id, 2^64-1, is taken", ErrInput)
	}
	return top + 1, nil
}

// Query returns every stored document within Hamming distance k of fp,
// nearest first (then by id). k may be at most K.
func (e *DB) Query(ctx context.Context, fp uint64, k int) ([]Match, error) {
	if k < 0 || k > e.design.K {
		return nil, fmt.Errorf("%w: k = %d, the index answers up to %d", ErrDistance, k, e.design.K)
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, ErrClosed
	}
	return e.queryLocked(ctx, fp, k)
}

type candidate struct {
	fp uint64
	d  int
}

func (e *DB) queryLocked(ctx context.Context, q uint64, k int) ([]Match, error) {
	st := e.st
	var cands []candidate
	add := func(fp uint64, d int) { cands = append(cands, candidate{fp, d}) }
	if err := e.probeAll(st, q, k, add); err != nil {
		return nil, err
	}
	e.mem.search(q, k, add)
	if e.imm != nil {
		e.imm.search(q, k, add)
	}
	if len(cands) == 0 {
		return nil, nil
	}
	var it *pebble.Iterator
	defer func() { st.release(it) }()
	return e.expand(st, cands, &it)
}

// expand turns candidate fingerprints into the documents that hold them
// now (memtables first, then the snapshot's postings, less what the
// memtables replace or delete), nearest first and then by id. *it is the
// postings iterator, opened on first use so that callers with many queries
// share one.
func (e *DB) expand(st *state, cands []candidate, it **pebble.Iterator) ([]Match, error) {
	slices.SortFunc(cands, func(a, b candidate) int { return cmpU64(a.fp, b.fp) })
	cands = slices.CompactFunc(cands, func(a, b candidate) bool { return a.fp == b.fp })
	var out []Match
	for _, c := range cands {
		for _, id := range e.mem.byFP[c.fp] {
			out = append(out, Match{Doc{id, c.fp, e.mem.docs[id].name}, c.d})
		}
		if e.imm != nil {
			for _, id := range e.imm.byFP[c.fp] {
				if !e.mem.touched.Contains(id) {
					out = append(out, Match{Doc{id, c.fp, e.imm.docs[id].name}, c.d})
				}
			}
		}
		var err error
		if out, err = e.postings(st, it, c.fp, c.d, out); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(out, func(a, b Match) int {
		if a.Distance != b.Distance {
			return a.Distance - b.Distance
		}
		return cmpU64(a.ID, b.ID)
	})
	return out, nil
}

// postings appends the flushed documents of fp that no memtable hides.
func (e *DB) postings(st *state, it **pebble.Iterator, fp uint64, d int, out []Match) ([]Match, error) {
	if *it == nil {
		var err error
		if *it, err = st.postingsIter(); err != nil {
			return nil, err
		}
	}
	pi := *it
	if u, ok, err := e.unitOf(st, pi, fp); err != nil {
		return nil, err
	} else if ok {
		for i := lowerBound(u.fps, fp); i < len(u.fps) && u.fps[i] == fp; i++ {
			if id := u.unit.ids[i]; !e.hidden(id) {
				var name string
				if u.unit.names != nil {
					name = u.unit.names[i]
				}
				out = append(out, Match{Doc{id, fp, name}, d})
			}
		}
		return out, nil
	}
	for e.seekPostings(pi, fp); pi.Valid(); pi.Next() {
		key := pi.Key()
		if len(key) != 17 || binary.BigEndian.Uint64(key[1:]) != fp {
			break
		}
		id := binary.BigEndian.Uint64(key[9:])
		if e.hidden(id) {
			continue
		}
		v, err := pi.ValueAndErr()
		if err != nil {
			return nil, err
		}
		out = append(out, Match{Doc{id, fp, string(v)}, d})
	}
	return out, pi.Error()
}

// hidden reports whether a memtable holds a newer write of id than the
// snapshot.
func (e *DB) hidden(id uint64) bool {
	return e.mem.touched.Contains(id) || e.imm != nil && e.imm.touched.Contains(id)
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// probeState is one table's probe for a query: the permuted query, its
// range, and where in the table the range starts.
type probeState struct {
	pq, lo, hi uint64
	j          int      // first block that may hold lo
	fps, pend  []uint64 // block j and its pending list, if it was cached
	i          int      // lowerBound(fps, lo)
	at         uint64   // fps[i] once guessed
}

// probeAll finds the fingerprints within distance k of q in every table and
// calls add for each. A probe is a chain of dependent reads: the block
// directory, the block's cache slot, the decoded block, each likely a cache
// miss in a large index, and on their own they would run one after
// another, table after table. The tables are independent, so probeAll takes
// each step for every table before the next: the core then overlaps the
// tables' misses. Blocks not cached, and ranges that span blocks, finish on
// the one-table path.
func (e *DB) probeAll(st *state, q uint64, k int, add func(fp uint64, d int)) error {
	tabs := e.design.Tables
	var stack [24]probeState
	ps := stack[:0]
	if len(tabs) > len(stack) {
		ps = make([]probeState, 0, len(tabs))
	}
	for t := range tabs {
		pq := tabs[t].Permute(q)
		lo, hi := tabs[t].Range(pq)
		ps = append(ps, probeState{pq: pq, lo: lo, hi: hi})
	}
	for t := range ps {
		ps[t].j = st.tables[t].start(ps[t].lo)
	}
	hits := 0
	for t := range ps {
		if ti := &st.tables[t]; ps[t].j < len(ti.keys) {
			var ok bool
			if ps[t].fps, ps[t].pend, ok = e.cache.peek(ti.slots[ps[t].j]); ok {
				hits++
			}
		}
	}
	e.cache.hit(hits)
	for t := range ps {
		i := guess(ps[t].fps, ps[t].lo)
		if i < len(ps[t].fps) {
			ps[t].at = ps[t].fps[i] // the load walk starts with, for every table at once
		}
		ps[t].i = i
	}
	for t := range ps {
		ps[t].i = walk(ps[t].fps, ps[t].lo, ps[t].i)
	}
	for t := range ps {
		if err := e.probe(st, t, &ps[t], k, add); err != nil {
			return err
		}
	}
	return nil
}

// probe scans table t for p's range from block p.j on, reading blocks that
// probeAll did not find in the cache.
func (e *DB) probe(st *state, t int, p *probeState, k int, add func(fp uint64, d int)) error {
	tb := &e.design.Tables[t]
	keys := st.tables[t].keys
	for j := p.j; j < len(keys); j++ {
		fps, pend, i := p.fps, p.pend, p.i
		if j != p.j || fps == nil {
			var err error
			if fps, pend, err = e.readBlock(st, t, j); err != nil {
				return err
			}
			i = lowerBound(fps, p.lo)
		}
		for ; i < len(fps) && fps[i] <= p.hi; i++ {
			if d := bits.OnesCount64(fps[i] ^ p.pq); d <= k {
				add(tb.Unpermute(fps[i]), d)
			}
		}
		for x := lowerBound(pend, p.lo); x < len(pend) && pend[x] <= p.hi; x++ {
			if d := bits.OnesCount64(pend[x] ^ p.pq); d <= k {
				add(tb.Unpermute(pend[x]), d)
			}
		}
		if keys[j] >= p.hi {
			break
		}
	}
	return nil
}

// readBlock returns the decoded block j of table t and its pending list,
// from the cache or from st's snapshot.
func (e *DB) readBlock(st *state, t, j int) (fps, pend []uint64, err error) {
	ti := &st.tables[t]
	if fps, pend, ok := e.cache.get(ti.slots[j]); ok {
		return fps, pend, nil
	}
	if fps, pend, err = decodeBlock(st.snap, st.codes[t], t, ti.keys[j], ti.pending(j)); err != nil {
		return nil, nil, err
	}
	e.cache.put(ti.slots[j], fps, pend)
	return fps, pend, nil
}

// decodeBlock reads and decodes block key of table t and its pending list
// of the given length.
func decodeBlock(r reader, codes codec.CodeMap, t int, key uint64, pending int) (fps, pend []uint64, err error) {
	v, c, err := r.Get(tableKey(spaceTables, t, key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil, fmt.Errorf("%w: table %d block %016x is in the block directory but not stored", ErrCorrupt, t, key)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("engine: table %d block %016x: %w", t, key, err)
	}
	defer c.Close()
	fps, err = codec.Decode(make([]uint64, 0, len(v)/4), v, codes)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: table %d block %016x: %w", ErrCorrupt, t, key, err)
	}
	if len(fps) == 0 || fps[len(fps)-1] != key {
		return nil, nil, fmt.Errorf("%w: table %d block %016x ends with another fingerprint", ErrCorrupt, t, key)
	}
	if pend, err = readPending(r, t, key, pending); err != nil {
		return nil, nil, err
	}
	for _, p := range pend {
		if _, found := slices.BinarySearch(fps, p); found {
			return nil, nil, inBlockToo(t, key, p)
		}
	}
	return fps, pend, nil
}

// readPending returns the pending list of n fingerprints of block key of
// table t.
func readPending(r reader, t int, key uint64, n int) ([]uint64, error) {
	if n == 0 {
		return nil, nil
	}
	v, c, err := r.Get(tableKey(spacePending, t, key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, fmt.Errorf("%w: table %d block %016x: the directory counts %d pending fingerprints, none are stored", ErrCorrupt, t, key, n)
	}
	if err != nil {
		return nil, fmt.Errorf("engine: table %d block %016x: %w", t, key, err)
	}
	defer c.Close()
	pend, err := parsePending(v, n)
	if err != nil {
		return nil, fmt.Errorf("table %d block %016x: %w", t, key, err)
	}
	return pend, nil
}

func inBlockToo(t int, key, p uint64) error {
	return fmt.Errorf("%w: table %d block %016x: pending %016x is in the block too", ErrCorrupt, t, key, p)
}

// withPending returns block key's fingerprints fps merged with its pending
// list of n fingerprints.
func withPending(r reader, t int, key uint64, n int, fps []uint64) ([]uint64, error) {
	pend, err := readPending(r, t, key, n)
	if err != nil {
		return nil, err
	}
	return mergePending(t, key, fps, pend)
}

// mergePending merges block key's fingerprints fps with its pending list.
func mergePending(t int, key uint64, fps, pend []uint64) ([]uint64, error) {
	if len(pend) == 0 {
		return fps, nil
	}
	out := make([]uint64, 0, len(fps)+len(pend))
	i, p := 0, 0
	for i < len(fps) || p < len(pend) {
		switch {
		case p == len(pend) || i < len(fps) && fps[i] < pend[p]:
			out = append(out, fps[i])
			i++
		case i == len(fps) || pend[p] < fps[i]:
			out = append(out, pend[p])
			p++
		default:
			return nil, inBlockToo(t, key, pend[p])
		}
	}
	return out, nil
}

// InsertIfNew is the crawler's decision: if no stored document lies within
// distance k of d's fingerprint, it inserts d and returns inserted = true;
// otherwise it returns the near-duplicates and stores nothing. Calls of
// InsertIfNew are atomic with respect to each other (two near-duplicates
// offered at once: one is inserted, the other is told about it).
func (e *DB) InsertIfNew(ctx context.Context, d Doc, k int) (matches []Match, inserted bool, err error) {
	e.dedupMu.Lock()
	defer e.dedupMu.Unlock()
	if matches, err = e.Query(ctx, d.Fingerprint, k); err != nil || len(matches) > 0 {
		return matches, false, err
	}
	if err := e.Insert(ctx, d); err != nil {
		return nil, false, err
	}
	return nil, true, nil
}

// pebbleLogger sends Pebble's logs to slog at debug level (errors at error).
type pebbleLogger struct{ l *slog.Logger }

func (p pebbleLogger) Infof(format string, args ...any) {
	p.l.Debug("pebble: " + fmt.Sprintf(format, args...))
}
func (p pebbleLogger) Errorf(format string, args ...any) {
	p.l.Error("pebble: " + fmt.Sprintf(format, args...))
}
func (p pebbleLogger) Fatalf(format string, args ...any) {
	p.l.Error("pebble: fatal: " + fmt.Sprintf(format, args...))
	os.Exit(1)
}
