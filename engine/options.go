package engine

import (
	"cmp"
	"fmt"
	"log/slog"
	"time"

	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/internal/memlimit"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/vfs"
	"github.com/simhashdb/simhashdb/wal"
)

// SyncMode says when a write is acknowledged; see the wal package.
type SyncMode = wal.SyncMode

// Sync modes.
const (
	// SyncAlways: a write is acknowledged once fsynced (concurrent writers
	// share one fsync); it survives a power loss.
	SyncAlways = wal.SyncAlways
	// SyncInterval: acknowledged once written to the operating system (it
	// survives kill -9), fsynced in the background within SyncPeriod.
	SyncInterval = wal.SyncInterval
	// SyncNone: acknowledged once written to the operating system; fsynced
	// at flushes and Close only.
	SyncNone = wal.SyncNone
)

// WALRecovery says what Open does with damage in the write-ahead log; see
// Options.WALRecovery.
type WALRecovery = wal.Recovery

// Recovery modes.
const (
	WALRecoverTail        = wal.RecoverTail
	WALRecoverStrict      = wal.RecoverStrict
	WALRecoverPointInTime = wal.RecoverPointInTime
)

// ParseWALRecovery parses a recovery mode's name: "tail", "strict" or
// "point-in-time".
func ParseWALRecovery(s string) (WALRecovery, error) { return wal.ParseRecovery(s) }

// ParseSyncMode parses a sync mode's name: "always", "interval" or "none".
func ParseSyncMode(s string) (SyncMode, error) { return wal.ParseSyncMode(s) }

// Defaults.
const (
	DefaultK            = 3
	DefaultSizeHint     = 1 << 24
	DefaultMemtableSize = 64 << 20
	// DefaultCacheSize is the cache budget where the memory the process
	// may use is unknown (see Options.CacheSize).
	DefaultCacheSize = 256 << 20
	// DefaultExpected is DefaultSizeHint's former name.
	//
	// Deprecated: use DefaultSizeHint.
	DefaultExpected = DefaultSizeHint
)

// Options configure Open. The zero value is a usable default.
type Options struct {
	// K is the largest distance queries may ask for (default 3). Fixed when
	// the index is created.
	K int
	// SizeHint is the number of fingerprints the index is expected to
	// hold: the optimiser designs the tables for it (default 2^24;
	// permutation.ForIndex). A hint, not a limit: ignored when Design is
	// set or the index exists.
	SizeHint int64
	// Expected is SizeHint's former name, used when SizeHint is 0.
	//
	// Deprecated: use SizeHint.
	Expected int64
	// Design overrides the optimiser's table design. Fewer tables take
	// less memory and disk for probes that scan longer ranges: at K = 3,
	// permutation.Paper(4) keeps 4 tables where the optimiser keeps 10 up
	// to a few hundred million fingerprints, for an index that must be
	// queried warm in little RAM. For an index much larger than its cache,
	// whose queries read the disk, permutation.ForDisk(K, n) picks the
	// design whose queries read the fewest pages (docs/performance.md,
	// "A design for the disk").
	Design *permutation.Design
	// BlockSize is the codec's block budget in bytes (default 1024).
	BlockSize int
	// MemtableSize bounds the memory of recent writes before a flush. The
	// default follows the index: 64 MiB, or 5 bytes per stored
	// fingerprint if that is more, up to 1 GiB, and no more than a
	// sixteenth of MemoryLimit, as two are held while one is flushed (see
	// memtableBudget).
	MemtableSize int64
	// CacheSize bounds the cache of table blocks (package cache; and of the
	// postings of matched fingerprints, packed the same way) and Pebble's
	// block cache together: Pebble's an eighth, or more when the index
	// blocks of its files need it, up to three quarters (Stats tells
	// both). The default is a quarter of MemoryLimit (DefaultCacheSize
	// where no limit is known); it yields to the index's memtables and
	// directories, which grow with it, so that the three stay within half
	// of MemoryLimit where they can (MemoryBudget).
	// The cache holds only what queries and writes read, so an index
	// smaller than the budget takes no more than its cached blocks: 6-8
	// bytes per fingerprint and table. Set it to bound the memory; the
	// Go heap may grow to about twice the cache between collections unless
	// GOMEMLIMIT is set.
	CacheSize int64
	// MemoryLimit is the memory the defaults of CacheSize, MemtableSize
	// and Reads are sized for; 0, the default, is the memory the process
	// may use: the least of GOMEMLIMIT, its memory cgroup's limit and the
	// machine's memory. A program that keeps memory of its own beside the
	// index (requests in flight, caches of its own) gives what it leaves
	// the index, as simhashdb serve does. It sets no limit: the Go
	// runtime's is GOMEMLIMIT's or runtime/debug.SetMemoryLimit's.
	MemoryLimit int64
	// SketchSize is the bytes of the sketch each document keeps
	// (Doc.Sketch), at most MaxSketch; 0, the default, keeps none. Fixed
	// when the index is created: given for an existing index, it must
	// match. An index with sketches is written in a format that builds
	// from before sketches refuse.
	SketchSize int
	// Sync chooses durability; the default is SyncAlways.
	Sync SyncMode
	// SyncPeriod is how often SyncInterval fsyncs in the background
	// (default 100 ms).
	SyncPeriod time.Duration
	// ReadOnly opens an existing index without writing to it; it works
	// on read-only media too.
	ReadOnly bool
	// Reads says how the index reads the blocks of its files that no
	// cache holds; the default, ReadsAuto, reads an index that is more
	// than 1.2 times MemoryLimit with O_DIRECT, and any other through the
	// page cache.
	Reads ReadMode
	// BlockingReads is Reads: ReadsBlocking.
	//
	// Deprecated: use Reads.
	BlockingReads bool
	// DirectReads is Reads: ReadsDirect.
	//
	// Deprecated: use Reads.
	DirectReads bool
	// WALRecovery says what opening does with a damaged record in the
	// write-ahead log (a torn tail, an unfinished write, is skipped in
	// every mode): by default (WALRecoverTail) it discards a damaged last
	// record, logs a warning, keeps its bytes in a file beside the log and
	// Check fails until that file is removed; damage with valid records
	// after it makes Open fail with ErrCorrupt. WALRecoverStrict refuses
	// any damage; WALRecoverPointInTime discards everything from the
	// first damage on, reported the same way.
	WALRecovery WALRecovery
	// Logger receives the engine's logs (index created, log replayed,
	// damage found, a background flush failed); nil discards them: a
	// library is quiet unless asked.
	Logger *slog.Logger
	// FS is the file system the index's files live on, as Pebble's
	// Options.FS: nil is the operating system's. vfs.NewMem keeps an
	// index in memory (tests, short-lived indexes); a wrapper can count or
	// fail operations. Reads go through an io_uring ring only on the
	// operating system's (FS nil).
	FS vfs.FS

	knobs        testingKnobs
	autoMemtable bool // MemtableSize was left to the default
	autoCache    bool // CacheSize was left to the default: fitCacheSize
	// memLimit is MemoryLimit, or the memory the process may use
	// (memlimit.Of), 0 where unknown: what the defaults of the cache, the
	// memtables and Reads follow.
	memLimit int64
	kSet     bool // K was given: it must match an existing index
	blockSet bool // BlockSize was given: likewise
}

// maxAutoMemtable caps the memtable budget that grows with the index.
const maxAutoMemtable = 1 << 30

// autoMemtableShare is the part of the memory the process may use that
// the default memtable budget may take: two are held while one is
// flushed, and the flush's merged blocks and the collector's headroom
// come on top, beside the cache's quarter (autoCacheShare).
// minAutoMemtable is as far as that lowers it.
const (
	autoMemtableShare = 16
	minAutoMemtable   = 4 << 20
)

// memtableBudget is the memtable size that triggers a flush, for an index
// of fps fingerprints. A flush rewrites or appends to the blocks its
// fingerprints fall in, so what it writes per document grows with the
// index over the memtable (docs/design.md, the write path). Unless the
// caller set a size, the budget grows with the index to keep that ratio: 5
// bytes per stored fingerprint (bench/results/journal.md has the trade-off).
func (o Options) memtableBudget(fps int64) int64 {
	if !o.autoMemtable {
		return o.MemtableSize
	}
	b := max(o.MemtableSize, min(maxAutoMemtable, fps*5))
	if o.memLimit > 0 {
		b = min(b, max(o.memLimit/autoMemtableShare, minAutoMemtable))
	}
	return b
}

func (o Options) withDefaults() (Options, error) {
	o.kSet, o.blockSet = o.K != 0, o.BlockSize != 0
	if o.K == 0 {
		o.K = DefaultK
	}
	if o.K < 0 || o.K > 16 {
		return o, fmt.Errorf("%w: K = %d, want 1..16", ErrOptions, o.K)
	}
	if o.SizeHint == 0 {
		o.SizeHint = cmp.Or(o.Expected, DefaultSizeHint)
	}
	if o.SketchSize < 0 || o.SketchSize > MaxSketch {
		return o, fmt.Errorf("%w: SketchSize = %d, want 0..%d", ErrOptions, o.SketchSize, MaxSketch)
	}
	if o.WALRecovery > WALRecoverPointInTime {
		return o, fmt.Errorf("%w: WALRecovery = %d", ErrOptions, o.WALRecovery)
	}
	if o.SizeHint < 0 {
		return o, fmt.Errorf("%w: SizeHint = %d", ErrOptions, o.SizeHint)
	}
	if o.BlockSize == 0 {
		o.BlockSize = codec.DefaultBlockSize
	}
	if o.BlockSize < codec.MinBlockSize || o.BlockSize > codec.MaxBlockSize {
		return o, fmt.Errorf("%w: BlockSize = %d, want %d..%d", ErrOptions, o.BlockSize, codec.MinBlockSize, codec.MaxBlockSize)
	}
	if o.MemoryLimit < 0 {
		return o, fmt.Errorf("%w: MemoryLimit = %d", ErrOptions, o.MemoryLimit)
	}
	o.memLimit = o.MemoryLimit
	if o.memLimit == 0 {
		o.memLimit = memlimit.Of("")
	}
	if o.MemtableSize == 0 {
		o.MemtableSize, o.autoMemtable = DefaultMemtableSize, true
	}
	if o.MemtableSize < 1<<10 {
		return o, fmt.Errorf("%w: MemtableSize = %d, want at least 1 KiB", ErrOptions, o.MemtableSize)
	}
	if o.CacheSize == 0 {
		o.CacheSize, o.autoCache = autoCacheSize(o.memLimit), true
	}
	if o.CacheSize < 1<<20 {
		return o, fmt.Errorf("%w: CacheSize = %d, want at least 1 MiB", ErrOptions, o.CacheSize)
	}
	if o.Reads < ReadsAuto || o.Reads > ReadsBlocking {
		return o, fmt.Errorf("%w: Reads = %d", ErrOptions, o.Reads)
	}
	if o.Reads == ReadsAuto && o.BlockingReads {
		o.Reads = ReadsBlocking
	} else if o.Reads == ReadsAuto && o.DirectReads {
		o.Reads = ReadsDirect
	}
	if o.Sync > SyncNone {
		return o, fmt.Errorf("%w: Sync = %d", ErrOptions, o.Sync)
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// design returns the design of a new index: Options.Design, or
// permutation.ForIndex's.
func (o Options) design() (*permutation.Design, error) {
	if o.Design != nil {
		if o.Design.K != o.K {
			return nil, fmt.Errorf("%w: Design is for K = %d, Options.K is %d", ErrOptions, o.Design.K, o.K)
		}
		return o.Design, nil
	}
	return permutation.ForIndex(o.K, int(o.SizeHint))
}

// autoCacheShare is the part of the memory the process may use that the
// default cache takes: the cached blocks are Go heap, which a collection
// lets grow to about twice what is live (GOGC), so a quarter keeps the
// worst case near half.
const autoCacheShare = 4

// autoCacheSize is the cache budget when Options.CacheSize is left at
// zero: a quarter of limit, the memory the process may use, or
// DefaultCacheSize where that is unknown (0). The cache holds only what
// queries read, so a small index takes no more than its cached blocks
// whatever the budget.
func autoCacheSize(limit int64) int64 {
	if limit <= 0 {
		return DefaultCacheSize
	}
	return max(limit/autoCacheShare, DefaultCacheSize/4)
}

// minFitCache is as far as fitCacheSize lowers the default cache: Pebble's
// least share (cache.MinPebbleCache) and as much again for table blocks.
const minFitCache = 16 << 20

// fitCacheSize is the default cache budget of an index whose memtables and
// directories take held bytes of the Go heap, for a process that may use
// limit: autoCacheSize, lowered so that the cache, the memtables and the
// directories stay within half of limit (the collector lets the heap grow
// to about twice what is live), down to minFitCache. Whole MiB, so that a
// flush's few new directory entries do not resize the cache each time.
func fitCacheSize(limit, held int64) int64 {
	c := autoCacheSize(limit)
	if limit <= 0 {
		return c
	}
	return max(min(c, limit/2-held), minFitCache) &^ (1<<20 - 1)
}

// testingKnobs are what only tests set, in the Options of the index they
// open: no test changes a package variable, so tests may run in parallel.
// The zero value is the engine's behaviour.
type testingKnobs struct {
	// flushWrites sees each flush's runs of writes before they are
	// committed, and the batches among them.
	flushWrites func([]store.Writes, []*store.Batch)
	// replayStep runs after each flush of a replay; an error stops Open
	// there, as a crash would.
	replayStep func() error
	// postingsPerSST and docsPerSST, when positive, are how many postings
	// and documents a bulk load writes to one sstable.
	postingsPerSST, docsPerSST int
	// loadMemory, when positive, is how many bytes of documents a bulk
	// load sorts in memory before it sorts in runs on disk.
	loadMemory int64
	// warmPebbleRoom, when set, is the room Warm leaves in Pebble's cache.
	warmPebbleRoom *int64
	// unitMax, when positive, is the most postings a cached unit holds.
	unitMax int
	// newStoreOrder, when set, orders the keys of a new store (tests make
	// the stores of earlier builds with Pebble's default).
	newStoreOrder *store.Order
	// afterPin runs when a read has pinned its view, before it computes.
	afterPin func()
	// stalled runs, with db.mu held, when a writer of a commit of cost
	// waits for room in the memtables or for its turn.
	stalled func(cost int64)
	// letIn runs, with db.mu held, when stall lets in a writer of a commit
	// of cost.
	letIn func(cost int64)
	// minPebbleCache, if not 0, replaces minPebbleCache: tests make an
	// index whose Pebble index blocks outgrow a small share.
	minPebbleCache int64
	// maxPebbleShare, if not 0, replaces maxPebbleShare: the baseline of
	// BenchmarkColdQuerySplit keeps Pebble's share at its base.
	maxPebbleShare float64
}
