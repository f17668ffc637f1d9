package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sync"

	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/memtable"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/engine/internal/table"
	"github.com/simhashdb/simhashdb/engine/internal/tasks"
	"github.com/simhashdb/simhashdb/engine/internal/uring"
	"github.com/simhashdb/simhashdb/huffman"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/vfs"
	"github.com/simhashdb/simhashdb/wal"
)

// Folders of an index directory.
const (
	walDir = "wal" // the engine's write-ahead log; store.Dir holds Pebble's
)

// Exists reports whether dir holds an index (one that Open would open
// rather than create).
func Exists(dir string) (bool, error) { return exists(vfs.Default, dir) }

func exists(fs vfs.FS, dir string) (bool, error) {
	if info, err := fs.Stat(dir); err == nil && !info.IsDir() {
		return false, fmt.Errorf("%w: %s is a file, not a folder", ErrNotIndex, dir)
	}
	_, err := fs.Stat(filepath.Join(dir, store.Dir))
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	return err == nil, err
}

// newIndexDir checks that dir may take a new index: it does not exist, or
// it is empty. An index made among other files would be easy to read as
// input by mistake, and to delete with them.
func newIndexDir(fs vfs.FS, dir string) error {
	names, err := fs.List(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	if len(names) > 0 {
		slices.Sort(names)
		return fmt.Errorf("%w: %s holds %d other files or folders (such as %q): create an index in a new or empty folder", ErrNotIndex, dir, len(names), names[0])
	}
	return nil
}

// readRingEntries is the most reads in flight through the ring: the
// probes' reads together across queries (maxMissReads) and Pebble's own.
const readRingEntries = 256

// Open opens the index in dir. Unless opts.ReadOnly, it creates one in a
// dir that does not exist or is empty; a dir that holds other files is
// refused with ErrNotIndex.
func Open(dir string, opts Options) (*DB, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	fs := opts.FS
	if fs == nil {
		fs = vfs.Default
	}
	found, err := exists(fs, dir)
	if err != nil {
		return nil, err
	}
	if !found {
		if opts.ReadOnly {
			return nil, fmt.Errorf("%w: no index in %s", ErrNotIndex, dir)
		}
		if err := newIndexDir(fs, dir); err != nil {
			return nil, err
		}
		if err := store.MakeDir(fs, dir); err != nil {
			return nil, err
		}
	}
	if found && !opts.ReadOnly {
		if err := checkBeforeWriting(fs, dir, opts.Logger); err != nil {
			return nil, err
		}
	}
	db := &DB{dir: dir, opts: opts, log: opts.Logger, block: opts.BlockSize, fs: fs,
		flushCh: make(chan struct{}, 1), quit: make(chan struct{}), readWorkers: tasks.NewWorkers(readWorkers)}
	if opts.ReadOnly {
		db.fs = store.ReadOnlyFS{FS: db.fs}
	}
	db.cond = sync.NewCond(&db.mu)
	db.stallGone = map[uint64]bool{}
	// The engine's block cache and Pebble's share Options.CacheSize
	// (cache.Budget).
	db.budget = cache.Budget{Total: opts.CacheSize, MinPebble: cmp.Or(opts.knobs.minPebbleCache, cache.MinPebbleCache), MaxShare: cmp.Or(opts.knobs.maxPebbleShare, cache.MaxPebbleShare)}
	db.cache = cache.New(db.budget.Engine(db.budget.Base()))
	if opts.FS == nil && opts.Reads != ReadsBlocking {
		if db.ring, err = uring.New(readRingEntries); err != nil {
			db.log.Debug("reading sstables with pread", "why", err)
		}
	}
	if db.ring != nil {
		var why []any
		if db.direct, why = readsDirect(db.fs, dir, opts); db.direct {
			db.log.Debug("reading sstables with O_DIRECT what the page cache does not hold", why...)
		}
	}
	db.store, err = store.Open(dir, store.Options{FS: db.fs, ReadOnly: opts.ReadOnly, Logger: opts.Logger,
		CacheSize: db.budget.Base(), CacheMax: db.budget.Most(), NewOrder: cmp.Or(opts.knobs.newStoreOrder, store.KeyOrder), Ring: db.ring, DirectReads: db.direct})
	if err != nil {
		if db.ring != nil {
			db.ring.Close()
		}
		return nil, err
	}
	if err := db.load(); err != nil {
		err = storeErr(err)
		db.store.Close()
		if db.ring != nil {
			db.ring.Close()
		}
		return nil, err
	}
	db.mem = memtable.New(db.design)
	if err := db.openWAL(); err != nil {
		db.close()
		return nil, err
	}
	if !opts.ReadOnly {
		db.bg.Add(1)
		go db.flusher()
		if db.mem.Size() >= db.memtableBudget() {
			db.signalFlush()
		}
	}
	return db, nil
}

// load reads (or, for a new index, writes) the metadata, the codes and the
// block directory, and makes the first state.
func (db *DB) load() error {
	if err := db.loadMeta(); err != nil {
		return err
	}
	wv, err := db.getMeta(format.MetaWALFrom)
	if err != nil {
		return err
	}
	walFrom, err := format.ParseWALPos(wv)
	if err != nil {
		return fmt.Errorf("%s: %w", db.dir, err)
	}
	cv, err := db.getMeta(format.MetaCounts)
	if err != nil {
		return err
	}
	docs, fps, err := format.ParseCounts(cv)
	if err != nil {
		return fmt.Errorf("%s: %w", db.dir, err)
	}
	applied := uint64(0)
	if av, ok, err := db.getMetaIf(format.MetaApplied); err != nil {
		return err
	} else if ok {
		if applied, err = format.ParseUvarint(av, format.MetaName(format.MetaApplied)); err != nil {
			return fmt.Errorf("%s: %w", db.dir, err)
		}
	}
	tables := make([]table.Index, len(db.design.Tables))
	for _, step := range []func([]table.Index) error{db.loadCodes, db.loadDirectory, db.loadPending} {
		if err := step(tables); err != nil {
			return err
		}
	}
	st := newState(tables, docs, fps, walFrom, db.newUnits(docs))
	st.applied = applied
	return db.install(st, successor{split: true})
}

// checkBeforeWriting opens the store of the index in dir read-only and
// refuses, before a writable open changes a file, a store its log does
// not continue (storeMatchesLog). Pebble's writable open deletes the
// sstables its MANIFEST does not list, and an index without metadata
// would be made anew beside the old one's log: when the MANIFEST lost
// edits (cut short, which Pebble reads as a crash's torn tail, or put back
// from an older copy), the open would make the loss permanent.
func checkBeforeWriting(fs vfs.FS, dir string, log *slog.Logger) error {
	if made, err := store.Exists(fs, dir); err != nil || !made {
		return err // none yet: an index whose making stopped early, made now
	}
	s, err := store.Open(dir, store.Options{FS: store.ReadOnlyFS{FS: fs}, ReadOnly: true, Logger: log, CacheSize: 1 << 20})
	if err != nil {
		return storeErr(err)
	}
	defer s.Close()
	return storeMatchesLog(s, fs, dir)
}

// storeMatchesLog refuses, as damage, a store r that the log of the index
// in dir does not continue: one without the index's metadata beside a log
// that holds segments (the index took writes), or one whose log position
// the log no longer holds (the same check as the log's replay).
func storeMatchesLog(r store.Reader, fs vfs.FS, dir string) error {
	logDir := filepath.Join(dir, walDir)
	_, c, err := r.Get(format.MetaFormat)
	if errors.Is(err, store.ErrKeyNotFound) {
		segs, err := wal.Segments(fs, logDir)
		if err != nil {
			return err
		}
		if len(segs) > 0 {
			return fmt.Errorf("%w: %s: the store holds no index (no format version), but the log holds writes (%s, %d segment files in all): the store lost its tables (its MANIFEST cut short or put back?); restore the index from a copy. Nothing was changed", ErrCorrupt, dir, wal.SegmentName(segs[0]), len(segs))
		}
		return nil
	}
	if err != nil {
		return err
	}
	c.Close()
	wv, c, err := r.Get(format.MetaWALFrom)
	if err != nil {
		if errors.Is(err, store.ErrKeyNotFound) {
			return fmt.Errorf("%w: %s: no %s", ErrCorrupt, dir, format.MetaName(format.MetaWALFrom))
		}
		return err
	}
	from, err := format.ParseWALPos(wv)
	c.Close()
	if err != nil {
		return fmt.Errorf("%s: %w", dir, err)
	}
	if err := wal.CheckStart(fs, logDir, from); err != nil {
		return walErr(fmt.Errorf("engine: %s: the store's state is older than its log, and a writable open would delete its newer files; nothing was changed: %w", dir, err))
	}
	return nil
}

// getMeta returns the value of metadata key k, which every index has.
func (db *DB) getMeta(k []byte) ([]byte, error) {
	v, ok, err := db.getMetaIf(k)
	if err == nil && !ok {
		err = fmt.Errorf("%w: %s: no %s", ErrCorrupt, db.dir, format.MetaName(k))
	}
	return v, err
}

// getMetaIf returns the value of metadata key k, if it is stored.
func (db *DB) getMetaIf(k []byte) ([]byte, bool, error) {
	v, c, err := db.store.Get(k)
	if errors.Is(err, store.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	defer c.Close()
	return slices.Clone(v), true, nil
}

// loadMeta reads (or, for a new index, writes) the format version, the
// table design and the block size, and checks them against the options.
func (db *DB) loadMeta() error {
	fv, ok, err := db.getMetaIf(format.MetaFormat)
	if err != nil {
		return err
	}
	if !ok {
		if db.opts.ReadOnly {
			if err := storeMatchesLog(db.store, db.fs, db.dir); err != nil {
				return err
			}
			return fmt.Errorf("%w: %s holds no simhashdb index", ErrNotIndex, db.dir)
		}
		if err := db.create(); err != nil {
			return err
		}
		if fv, err = db.getMeta(format.MetaFormat); err != nil {
			return err
		}
	}
	version, err := format.ParseVersion(fv)
	if err != nil {
		return fmt.Errorf("%s: %w", db.dir, err)
	}
	if err := db.loadSketchSize(version); err != nil {
		return err
	}
	dv, err := db.getMeta(format.MetaDesign)
	if err != nil {
		return err
	}
	db.design = new(permutation.Design)
	if err := db.design.UnmarshalBinary(dv); err != nil {
		return format.Corrupt(db.dir+": stored table design", err)
	}
	// Options that name a K or design must agree with the index.
	if db.opts.Design != nil && !db.opts.Design.Equal(db.design) {
		return fmt.Errorf("%w: %s was built with a different table design (K = %d, %d tables)", ErrOptions, db.dir, db.design.K, len(db.design.Tables))
	}
	if db.opts.kSet && db.opts.K != db.design.K {
		return fmt.Errorf("%w: %s was built for K = %d, opened with K = %d", ErrOptions, db.dir, db.design.K, db.opts.K)
	}
	bv, err := db.getMeta(format.MetaBlock)
	if err != nil {
		return err
	}
	bs, err := format.ParseUvarint(bv, "block size")
	if err == nil && (bs < codec.MinBlockSize || bs > codec.MaxBlockSize) {
		err = fmt.Errorf("%w: stored block size %d", ErrCorrupt, bs)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", db.dir, err)
	}
	if db.opts.blockSet && db.opts.BlockSize != int(bs) {
		return fmt.Errorf("%w: %s was built with %d-byte blocks, opened with %d", ErrOptions, db.dir, bs, db.opts.BlockSize)
	}
	db.block = int(bs)
	return nil
}

// loadSketchSize reads the size of the documents' sketches: an index of
// format version 5 has one, an older one none.
func (db *DB) loadSketchSize(version uint32) error {
	v, ok, err := db.getMetaIf(format.MetaSketch)
	if err != nil {
		return err
	}
	var size uint64
	if ok {
		if size, err = format.ParseUvarint(v, "sketch size"); err == nil && (size == 0 || size > MaxSketch) {
			err = fmt.Errorf("%w: stored sketch size %d, want 1..%d", ErrCorrupt, size, MaxSketch)
		}
		if err != nil {
			return fmt.Errorf("%s: %w", db.dir, err)
		}
	}
	if ok != (version >= 5) {
		return fmt.Errorf("%w: %s: format version %d, sketch size stored: %t", ErrCorrupt, db.dir, version, ok)
	}
	if db.opts.SketchSize != 0 && db.opts.SketchSize != int(size) {
		return fmt.Errorf("%w: %s keeps sketches of %d bytes, opened with SketchSize = %d", ErrOptions, db.dir, size, db.opts.SketchSize)
	}
	db.sketch = int(size)
	return nil
}

// loadCodes reads every table's Huffman codes.
func (db *DB) loadCodes(tables []table.Index) error {
	for t := range tables {
		tables[t] = table.Sized(codec.CodeMap{}, 0, 0)
	}
	return db.scan(format.MetaCodes, func(k, v []byte) error {
		t, id, err := format.ParseMetaCodeKey(k, len(tables))
		if err != nil {
			return err
		}
		c, err := huffman.Unmarshal(v)
		if err != nil {
			return format.Corrupt(fmt.Sprintf("table %d code %d", t, id), err)
		}
		tables[t].AddCode(id, c)
		return nil
	})
}

// loadDirectory reads every table's block directory.
func (db *DB) loadDirectory(tables []table.Index) error {
	err := db.scan(format.SpacePrefix(format.SpaceBlockDir), func(k, v []byte) error {
		t, key, err := format.ParseTableKey(format.SpaceBlockDir, k, len(tables))
		if err != nil {
			return err
		}
		e, err := format.ParseDirValue(v)
		if err != nil {
			return format.BlockErr(t, key, err)
		}
		tables[t].AppendBlock(key, e, 0, nil)
		return nil
	})
	if err != nil {
		return err
	}
	// The directory grows with the index (a block holds a few hundred
	// fingerprints at most): exact slices, and the slots in one array.
	for t := range tables {
		tables[t].Exact()
	}
	return nil
}

// pendingDamaged is the pending count open gives a list it cannot count:
// more than a list holds, so that reading it fails and a flush rewrites,
// rather than appends to, its block.
const pendingDamaged = format.PendingMax + 1

// loadPending counts the pending lists' fingerprints: a flush appends to a
// list without rewriting its block's directory entry.
func (db *DB) loadPending(tables []table.Index) error {
	return db.scan(format.SpacePrefix(format.SpacePending), func(k, v []byte) error {
		t, key, err := format.ParseTableKey(format.SpacePending, k, len(tables))
		if err != nil {
			return err
		}
		ti := &tables[t]
		j, found := slices.BinarySearch(ti.Keys(), key)
		if !found {
			return format.CorruptBlock(t, key, "a pending list for a block the directory does not have")
		}
		n := 0
		if _, err := format.ScanPending(v, format.PendingMax, func(uint64) { n++ }); err != nil {
			// Open anyway, as with a damaged block: reading this one (a
			// query, a flush, Check) reports the damage with its place.
			db.log.Warn("simhashdb: damaged pending list", "table", t, "block", fmt.Sprintf("%016x", key), "err", err)
			n = pendingDamaged
		}
		ti.SetPending(j, uint16(n))
		return nil
	})
}

// create writes the metadata of a new index.
func (db *DB) create() error {
	d, err := db.opts.design()
	if err != nil {
		return err
	}
	if len(d.Tables) > 255 {
		return fmt.Errorf("%w: %d tables, at most 255", ErrOptions, len(d.Tables))
	}
	designBytes, err := d.MarshalBinary()
	if err != nil {
		return err
	}
	b := db.store.NewBatch()
	defer b.Close()
	for _, kv := range [][2][]byte{
		{format.MetaFormat, format.VersionValue(format.VersionFor(db.opts.SketchSize > 0))},
		{format.MetaDesign, designBytes},
		{format.MetaBlock, format.UvarintValue(uint64(db.opts.BlockSize))},
		{format.MetaWALFrom, format.WALPosValue(wal.Position{Segment: 1})},
		{format.MetaCounts, format.CountsValue(0, 0)},
	} {
		if err := b.Set(kv[0], kv[1]); err != nil {
			return err
		}
	}
	if db.opts.SketchSize > 0 {
		if err := b.Set(format.MetaSketch, format.UvarintValue(uint64(db.opts.SketchSize))); err != nil {
			return err
		}
	}
	db.log.Info("simhashdb: created index", "dir", db.dir, "k", d.K, "tables", len(d.Tables), "min_prefix", d.MinPrefix())
	return db.store.Commit(context.Background(), db.store.BatchWrites(b))
}

// scan calls fn for every key with the prefix p in the live database.
func (db *DB) scan(p []byte, fn func(k, v []byte) error) error {
	return store.Scan(db.store, p, fn)
}
