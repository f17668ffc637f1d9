package engine

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/huffman"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/wal"
)

// pebbleFormat pins Pebble's on-disk format: the newest named version of
// pebble/v2.1 (Pebble's default is an old row format).
const pebbleFormat = pebble.FormatValueSeparation

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
