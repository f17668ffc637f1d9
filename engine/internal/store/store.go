package store

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/bloom"
	"github.com/cockroachdb/pebble/v2/record"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/uring"
)

// Dir is the folder of an index directory that holds the Pebble store.
const Dir = "pebble"

// pebbleFormat pins Pebble's on-disk format: the newest named version of
// pebble/v2.1 (Pebble's default is an old row format).
const pebbleFormat = pebble.FormatValueSeparation

// Store is an index's Pebble store, which it keeps to itself: the engine
// reads it through snapshots and iterators (iter.go) and writes it only
// with Commit and Load.
type Store struct {
	db   *pebble.DB
	opts *pebble.Options
	// PrefixSeek: the store orders keys with KeyOrder, so a posting look-up
	// can seek by prefix and Pebble's bloom filters answer it.
	PrefixSeek bool
	// cache is Pebble's block cache. CacheSize is its size at open, which
	// the store's heuristics use; the share it may hold now is
	// CacheShare, which SetCacheShare moves up to CacheMax.
	cache     *pebble.Cache
	CacheSize int64
	CacheMax  int64

	shareMu sync.Mutex
	share   atomic.Int64
	release func() // gives back the reservation that holds Cache to share

	dir string // the index directory: scratch folders, free space
	fs  vfs.FS
	log *slog.Logger
	// damaged is the first damage Pebble reported (Damaged).
	damaged atomic.Pointer[error]
	reads   readCount // of sstables at offsets: Reads, ReadRounds
	// blocks is where a read-only store's data blocks are, for reads
	// without Pebble (Snapshot.GetMany); nil without a ring.
	blocks *blockMap
	// logFree and logSinceStat are LogRoom's view of the disk; its caller
	// serialises the calls.
	logFree, logSinceStat int64
}

// Options configure Open.
type Options struct {
	FS        vfs.FS // the index's file system, read-only ones wrapped (ReadOnlyFS)
	ReadOnly  bool
	Logger    *slog.Logger
	CacheSize int64 // of Pebble's block cache
	CacheMax  int64 // what SetCacheShare may give it; CacheSize if less
	// NewOrder is the key order of a store Open creates: KeyOrder, unless
	// a test makes a store as earlier builds did.
	NewOrder *Order
	// Ring, when set, is what Pebble reads its sstables through; the
	// caller closes it after the store.
	Ring *uring.Ring
	// DirectReads reads through Ring with O_DIRECT what the page cache
	// does not hold.
	DirectReads bool
}

// Open opens (or creates) the Pebble store of the index in dir. It first
// refuses a store whose MANIFEST is damaged before its end and one that is
// not a simhashdb store, and keeps the key order a store was created with.
func Open(dir string, o Options) (*Store, error) {
	pdir := filepath.Join(dir, Dir)
	if err := CheckManifest(o.FS, pdir); err != nil {
		return nil, err
	}
	order, err := storedOrder(o.FS, pdir, o.NewOrder)
	if err != nil {
		return nil, err
	}
	if err := ownStore(o.FS, pdir, order); err != nil {
		return nil, err
	}
	s := &Store{dir: dir, fs: o.FS, log: o.Logger, PrefixSeek: order == KeyOrder, CacheSize: o.CacheSize, CacheMax: max(o.CacheMax, o.CacheSize)}
	s.cache = pebble.NewCache(s.CacheMax)
	s.SetCacheShare(o.CacheSize)
	s.opts = s.pebbleOptions(order, o.ReadOnly)
	s.opts.FS = readFS{FS: s.fs, ring: o.Ring, reads: &s.reads, direct: o.DirectReads}
	if s.db, err = pebble.Open(pdir, s.opts); err != nil {
		s.cache.Unref()
		if lockHeld(err) {
			return nil, fmt.Errorf("%w: %s (%v)", ErrLocked, dir, err)
		}
		if errors.Is(err, syscall.EROFS) {
			return nil, fmt.Errorf("%w: %s is on a read-only file system: open it read-only to query it: %w", ErrReadOnly, dir, err)
		}
		if manifestDamaged(err) {
			return nil, fmt.Errorf("%w: %s: the store's MANIFEST (the list of its files) does not read to its end: the index is damaged; restore it from a copy (%w)", format.ErrCorrupt, pdir, err)
		}
		if filesMissing(o.FS, pdir, err) {
			return nil, fmt.Errorf("%w: %s: files the store's MANIFEST lists are not there (removed, or the MANIFEST altered): the index is damaged; restore it from a copy (%w)", format.ErrCorrupt, pdir, err)
		}
		return nil, fmt.Errorf("engine: opening %s: %w", pdir, err)
	}
	if o.ReadOnly && o.Ring != nil {
		s.blocks = s.newBlockMap(o.Ring, o.DirectReads)
	}
	return s, nil
}

// manifestDamaged reports whether Pebble's open failed on its MANIFEST's
// records, which a damaged file gives.
func manifestDamaged(err error) bool {
	for _, e := range []error{record.ErrInvalidChunk, record.ErrZeroedChunk, record.ErrUnexpectedEOF, pebble.ErrCorruption} {
		if errors.Is(err, e) {
			return true
		}
	}
	// Pebble marks its corruption errors its own way (a MANIFEST that
	// holds no complete edit is one), which errors.Is does not see.
	return pebble.IsCorruptionError(err)
}

// filesMissing reports whether Pebble's open of an existing store failed
// for a file its MANIFEST names and the folder lacks.
func filesMissing(fs vfs.FS, pdir string, err error) bool {
	if !errors.Is(err, os.ErrNotExist) {
		return false
	}
	desc, perr := pebble.Peek(pdir, fs)
	return perr == nil && desc.Exists
}

// Reads is how many reads of its sstables Pebble has made since the store
// opened: every block a query or a flush does not find in a cache, and
// the reads of compactions.
func (s *Store) Reads() int64 { return s.reads.reads.Load() }

// ReadRounds is the rounds Reads came in: the longest chain of reads each
// of which started after the one before it had finished. With one query
// at a time and nothing else reading, it grows by the rounds of reads each
// query waited for, one after another.
func (s *Store) ReadRounds() int64 { return s.reads.rounds.Load() }

// Close closes the store and lets go of its cache.
func (s *Store) Close() error {
	err := s.db.Close()
	if s.blocks != nil {
		err = errors.Join(err, s.blocks.close())
	}
	s.cache.Unref()
	return err
}

// Checkpoint writes the store as it stands into the folder Dir of index
// folder dir (created), its files linked where the file system allows,
// with its log written out: a store that opens as this one would.
func (s *Store) Checkpoint(dir string) error {
	return s.db.Checkpoint(filepath.Join(dir, Dir), pebble.WithFlushedWAL())
}

// ReserveCache keeps n bytes of Pebble's block cache from its blocks
// until release is called: a reader that fills the engine's cache leaves
// Pebble's little room, which its index blocks then keep.
func (s *Store) ReserveCache(n int) (release func()) { return s.cache.Reserve(n) }

// CacheStats are Pebble's block cache's hits, misses and bytes held.
func (s *Store) CacheStats() (hits, misses, size int64) {
	bc := s.db.Metrics().BlockCache
	return bc.Hits, bc.Misses, bc.Size
}

// Metrics is Pebble's own report on the store, for benchmarks and
// debugging: its types are Pebble's.
func (s *Store) Metrics() *pebble.Metrics { return s.db.Metrics() }

// ReaderOptions are the options an sstable of the store reads with, for
// tests that read its files themselves.
func (s *Store) ReaderOptions() sstable.ReaderOptions {
	return sstable.ReaderOptions{Comparer: s.opts.Comparer, KeySchemas: s.opts.KeySchemas}
}

// CacheShare is what Pebble's block cache may hold now.
func (s *Store) CacheShare() int64 { return s.share.Load() }

// SetCacheShare lets Pebble's block cache hold n bytes (at most CacheMax),
// evicting down to it: the cache is made CacheMax bytes large, and the
// rest is reserved, which takes no memory.
func (s *Store) SetCacheShare(n int64) {
	n = min(n, s.CacheMax)
	s.shareMu.Lock()
	defer s.shareMu.Unlock()
	if s.release != nil {
		if n == s.share.Load() {
			return
		}
		s.release()
	}
	s.release = s.cache.Reserve(int(s.CacheMax - n))
	s.share.Store(n)
}

// Damaged returns the first damage Pebble reported in the background (a
// block it could not read), or nil.
func (s *Store) Damaged() error {
	if p := s.damaged.Load(); p != nil {
		return *p
	}
	return nil
}

// WriterOptions are the options of an sstable the engine writes for
// level (0 for a flush's commit; a bulk load's go to the bottom).
func (s *Store) WriterOptions(level int) sstable.WriterOptions {
	return s.opts.MakeWriterOptions(level, pebbleFormat.MaxTableFormat())
}

// pebbleOptions are the options of the store.
func (s *Store) pebbleOptions(order *pebble.Comparer, readOnly bool) *pebble.Options {
	po := &pebble.Options{Cache: s.cache, Comparer: order, FormatMajorVersion: pebbleFormat, ReadOnly: readOnly,
		FS: s.fs, Logger: pebbleLogger{s.log}, EventListener: s.pebbleEvents(),
		// The engine's log holds what Pebble does not yet (Commit.go).
		DisableWAL: true}
	// Table blocks are Huffman-coded already and the other keys are mostly
	// random 64-bit numbers: Pebble's compression would cost CPU for little.
	po.ApplyCompressionSettings(func() pebble.DBCompressionSettings { return pebble.DBCompressionNone })
	for i := range po.Levels {
		po.Levels[i].FilterPolicy = bloom.FilterPolicy(10)
	}
	po.EnsureDefaults()
	return po
}

// IndexBytes is the size of the blocks Pebble reads to find a key besides
// its data block, the index and filter blocks, of the files that hold keys
// in any of spans ([lower, upper) each): a read of a block not cached
// takes them from Pebble's block cache when it holds them, from the disk
// when it does not. A file that also holds keys outside the spans counts
// whole.
func (s *Store) IndexBytes(spans ...[2][]byte) (int64, error) { return s.indexBytes(true, spans) }

// IndexOnlyBytes is IndexBytes without the filter blocks: what a seek
// that does not ask the filters (a posting look-up) reads.
func (s *Store) IndexOnlyBytes(spans ...[2][]byte) (int64, error) { return s.indexBytes(false, spans) }

func (s *Store) indexBytes(filters bool, spans [][2][]byte) (int64, error) {
	var n int64
	seen := map[uint64]bool{} // a file in two spans; virtual files share their backing's blocks
	for _, sp := range spans {
		levels, err := s.db.SSTables(pebble.WithProperties(), pebble.WithKeyRangeFilter(sp[0], sp[1]))
		if err != nil {
			return 0, err
		}
		for _, tables := range levels {
			for _, t := range tables {
				if p := t.Properties; p != nil && !seen[uint64(t.BackingSSTNum)] {
					seen[uint64(t.BackingSSTNum)] = true
					n += int64(p.IndexSize)
					if filters {
						n += int64(p.FilterSize)
					}
				}
			}
		}
	}
	return n, nil
}

// Exists reports whether the index in dir has a Pebble store Pebble would
// open (a MANIFEST named by its marker), rather than create.
func Exists(fs vfs.FS, dir string) (bool, error) {
	desc, err := pebble.Peek(filepath.Join(dir, Dir), fs)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return desc.Exists, nil
}
