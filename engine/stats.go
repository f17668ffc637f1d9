package engine

import (
	"context"
	"errors"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/memtable"
	"github.com/simhashdb/simhashdb/engine/internal/store"

	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/permutation"
)

// TableStats describes one permuted table.
type TableStats struct {
	Prefix int    `json:"prefix_bits"`
	Layout string `json:"layout"`
	Blocks int    `json:"blocks"`
	Bytes  int64  `json:"bytes"`
	Codes  int    `json:"codes"`
	// Pending counts the fingerprints flushed into pending lists beside
	// the blocks, not yet merged into them (not in Bytes).
	Pending int64 `json:"pending"`
}

// Stats describes the index. Documents counts what a reader finds, the
// writes not yet flushed included; Fingerprints counts the distinct
// fingerprints of the tables, which a flush brings up to date;
// PendingWrites counts the memtable's writes not yet flushed.
type Stats struct {
	K int `json:"k"`
	// ExactWithin is the distance within which queries find every stored
	// fingerprint: K, or less for a design built to propose candidates
	// (permutation.ForCandidates), whose tables find most beyond it.
	ExactWithin int `json:"exact_within"`
	// Design is the index's table design (a copy: Design()), which says
	// each table's permutation; Tables says it as text.
	Design       *permutation.Design `json:"-"`
	Documents    int64               `json:"documents"`
	Fingerprints int64               `json:"fingerprints"`
	Tables       []TableStats        `json:"tables"`
	// TableBytes is the size of every table block.
	TableBytes int64 `json:"table_bytes"`
	// BitsPerFingerprint is the codec's cost of one fingerprint in one
	// table: each table's bytes x 8 over the fingerprints in its blocks
	// (Fingerprints less its Pending), averaged over the tables.
	BitsPerFingerprint float64 `json:"bits_per_fingerprint"`
	// BlockVersions counts the table blocks by the codec version their
	// directory entries name: "3", or "1-2" for blocks written before
	// the directory named versions (index format 4), which are of codec
	// version 1 or 2 (Check reads each and tells them apart). A flush
	// rewrites older blocks as it merges into them, in the newest.
	BlockVersions map[string]int `json:"block_versions"`
	// EntropyBound is log2(C(2^64, n))/n for the n distinct fingerprints.
	EntropyBound float64 `json:"entropy_bound_bits"`
	// SketchSize is the bytes of the sketch each document keeps, 0 for
	// none (Options.SketchSize).
	SketchSize    int   `json:"sketch_bytes,omitempty"`
	BlockSize     int   `json:"block_size"`
	PendingWrites int   `json:"pending_writes"`
	MemtableBytes int64 `json:"memtable_bytes"`
	// MemtableBudget is the memtable size that triggers a flush now;
	// MemtablesMax the memory of all memtables at which writes wait for
	// a flush (one filling while one is flushed): what the memtables take
	// in a process's memory.
	MemtableBudget int64 `json:"memtable_budget"`
	MemtablesMax   int64 `json:"memtables_max"`
	WALBytes       int64 `json:"wal_bytes"`
	// PebbleBytes and BytesOnDisk count what the files take on disk
	// (allocated blocks: Pebble preallocates its logs), Pebble's and the
	// whole index's.
	PebbleBytes int64 `json:"pebble_bytes"`
	BytesOnDisk int64 `json:"bytes_on_disk"`
	// CacheSize is the cache budget, Options.CacheSize or the default as
	// it is now (MemoryBudget); CacheBytes is what the cached blocks and postings
	// take of it now.
	CacheSize      int64  `json:"cache_size"`
	CacheBytes     int64  `json:"cache_bytes"`
	CacheHits      uint64 `json:"cache_hits"`
	CacheMisses    uint64 `json:"cache_misses"`
	PebbleCacheHit int64  `json:"pebble_cache_hits"`
	// PebbleCacheBytes is what Pebble's block cache holds now, within
	// its share of CacheSize, PebbleCacheSize: an eighth (8 MiB at least),
	// more when its index blocks need it.
	PebbleCacheBytes int64 `json:"pebble_cache_bytes"`
	PebbleCacheSize  int64 `json:"pebble_cache_size"`
	// PebbleIndexBytes is the size of the index and filter blocks of the
	// Pebble files that hold table blocks and pending lists, and of the
	// index blocks of those that hold postings, which a read of a block
	// not cached goes through. When it exceeds PebbleCacheSize,
	// a cold query reads some of them from the disk besides its table
	// blocks. Pebble's share grows to hold them, up to three quarters of
	// CacheSize (PebbleCacheSize says how far). Where Pebble cannot read
	// its files' properties, Stats returns a *StatsError naming this field
	// and CacheForIndex, both zero (Check names the damage).
	PebbleIndexBytes int64 `json:"pebble_index_bytes"`
	// CacheForIndex is the CacheSize whose Pebble share holds those
	// blocks.
	CacheForIndex int64 `json:"cache_size_for_pebble_index"`
	// FileReads counts the reads of stored blocks since Open: those no
	// cache held, for queries, flushes and Pebble's compactions.
	// ReadRing says they go through an io_uring ring (Options.Reads).
	FileReads int64 `json:"file_reads"`
	// FileReadRounds counts the rounds FileReads came in: the longest chain
	// of reads each of which started after the one before it had finished.
	// Over queries made one at a time, it grows by the rounds of reads
	// each waited for, one after another. Through the ring (ReadRing) a
	// read the page cache held makes no round.
	FileReadRounds int64 `json:"file_read_rounds"`
	ReadRing       bool  `json:"read_ring"`
	// ReadDirect says the ring reads what the page cache does not hold
	// with O_DIRECT (Options.Reads).
	ReadDirect bool `json:"read_direct"`
	// ReadSubmits counts the ring's system calls that entered reads since
	// Open, ReadSubmitTime the time in them and ReadWaitTime the time it
	// waited in the kernel for their completions (zero without a ring).
	// A submission costs the file system's and the block layer's work for
	// each read and one notification of the device, which on a virtual
	// machine can take as long as a read's service: beyond the two, a
	// cold query's time is its processor's and the page cache's, and its
	// rounds (FileReadRounds), not its reads, set how many submissions it
	// pays.
	ReadSubmits    int64         `json:"read_submits"`
	ReadSubmitTime time.Duration `json:"read_submit_ns"`
	ReadWaitTime   time.Duration `json:"read_wait_ns"`
	// Applied is the position of the last commit applied that had one
	// (Commit.Position): how far a replica has applied its log.
	Applied uint64 `json:"applied,omitempty"`
}

// Stats returns the index's statistics. A figure it cannot measure (the
// index is damaged) makes the error a *StatsError, returned with every
// other figure filled.
func (db *DB) Stats(ctx context.Context) (_ Stats, err error) {
	if err := ctx.Err(); err != nil {
		return Stats{}, err
	}
	defer func() { err = storeErr(err) }()
	log := db.currentLog() // before mu: commitMu comes first
	if err := db.rlockOpen(); err != nil {
		return Stats{}, err
	}
	defer db.mu.RUnlock()
	st := db.st
	docs, err := db.documents()
	if err != nil {
		return Stats{}, err
	}
	s := Stats{K: db.design.K, ExactWithin: db.design.ExactWithin(), Design: db.design.Clone(), SketchSize: db.sketch, Documents: docs, Fingerprints: st.fps, BlockSize: db.block, MemtableBudget: db.memtableBudget(), MemtablesMax: db.memtablesMax(),
		BlockVersions: map[string]int{}, Applied: db.Applied()}
	var versions [256]int // by codec version: a map per block would cost a stats call on a large index
	for t := range st.tables {
		ti := &st.tables[t]
		ts := TableStats{Prefix: db.design.Tables[t].Prefix, Layout: db.design.Tables[t].String(), Blocks: ti.Len(), Codes: len(ti.Codes()),
			Bytes: ti.Bytes(), Pending: ti.PendingTotal()}
		for j := range ti.Len() {
			versions[ti.Entry(j).Version()]++
		}
		s.TableBytes += ts.Bytes
		s.Tables = append(s.Tables, ts)
		if inBlocks := st.fps - ts.Pending; inBlocks > 0 {
			s.BitsPerFingerprint += float64(ts.Bytes*8) / float64(inBlocks) / float64(len(st.tables))
		}
	}
	for v, n := range versions {
		if n > 0 {
			s.BlockVersions[blockVersionName(uint8(v))] = n
		}
	}
	if st.fps > 0 {
		s.EntropyBound = codec.Bound(int(st.fps))
	}
	for _, m := range append([]*memtable.Memtable{db.mem}, db.frozen...) {
		s.PendingWrites += m.Len()
		s.MemtableBytes += m.Size()
	}
	if log != nil {
		s.WALBytes = log.Size()
	}
	s.PebbleBytes = store.DirSize(db.fs, filepath.Join(db.dir, store.Dir))
	s.BytesOnDisk = s.PebbleBytes + store.DirSize(db.fs, filepath.Join(db.dir, walDir))
	s.CacheSize = db.budget.Total
	s.CacheBytes, s.CacheHits, s.CacheMisses = db.cache.Stats()
	s.PebbleCacheHit, _, s.PebbleCacheBytes = db.store.CacheStats()
	s.FileReads, s.FileReadRounds, s.ReadRing = db.store.Reads(), db.store.ReadRounds(), db.ring != nil
	s.ReadDirect = s.ReadRing && db.direct
	rt := db.ring.Times()
	s.ReadSubmits, s.ReadSubmitTime, s.ReadWaitTime = rt.Submits, rt.Submit, rt.Wait
	s.PebbleCacheSize = db.store.CacheShare()
	idx, err := db.tableIndexBytes()
	if err != nil {
		return s, &StatsError{Fields: []string{"PebbleIndexBytes", "CacheForIndex"}, Err: storeErr(err)}
	}
	s.PebbleIndexBytes = idx
	s.CacheForIndex = db.budget.TotalFor(idx)
	return s, nil
}

// blockVersionName names a codec version that a directory entry gives.
func blockVersionName(v uint8) string {
	if v == 0 {
		return "1-2"
	}
	return strconv.Itoa(int(v))
}

// MemoryBudget is the memory an index's own structures work within, as
// the options and the index's size set it now (Stats has the same
// figures, with what they hold).
type MemoryBudget struct {
	// Cache is the cache's budget, Pebble's block cache included:
	// Options.CacheSize, or the default as it is now (it yields to the
	// memtables and the directories as they grow); PebbleCache is
	// Pebble's share of it, which Pebble keeps outside the Go heap where
	// cgo is enabled.
	Cache, PebbleCache int64
	// Memtables is the memory of all memtables at which writes wait for a
	// flush (Stats.MemtablesMax); it grows with the index unless
	// Options.MemtableSize was given.
	Memtables int64
	// Directories is the memory of what the index keeps in memory of
	// every block, which grows with it: each table's directory (a block's
	// key, size, pending count and cache slot), the postings' units and,
	// opened read-only, the store's map of its data blocks. A writable
	// index counts the tables' directories twice: a flush builds new ones
	// beside those queries use.
	Directories int64
}

// MemoryBudget returns the index's memory budget now. It costs a lock and
// a look at each table, not a walk of the index as Stats does: a server
// may ask it often.
func (db *DB) MemoryBudget() MemoryBudget {
	db.mu.RLock()
	defer db.mu.RUnlock()
	return MemoryBudget{Cache: db.budget.Total, PebbleCache: db.store.CacheShare(), Memtables: db.memtablesMax(), Directories: db.directoryBytes()}
}

// directoryBytes is MemoryBudget.Directories; db.mu is held.
func (db *DB) directoryBytes() int64 {
	if db.st == nil { // closed
		return 0
	}
	var tables int64
	for t := range db.st.tables {
		tables += db.st.tables[t].MemoryBytes()
	}
	if !db.opts.ReadOnly {
		tables *= 2
	}
	n := tables + db.store.MapBytes()
	if db.st.units != nil {
		n += db.st.units.MemoryBytes()
	}
	return n
}

// docCount counts the documents a reader finds: the flushed ones, and what
// the memtables add and remove. A memtable's writes are counted against
// the layers below it, one look-up each, so the count is kept for as long
// as neither the memtables nor what is below them change: frozen
// memtables are never written, and a freeze or a flush changes the newest
// frozen one or the state.
type docCount struct {
	mu     sync.Mutex
	st     *state
	mem    *memtable.Memtable
	writes uint64 // mem's at the count
	frozen int
	newest *memtable.Memtable // the newest frozen memtable at the count
	n      int64
}

// documents returns the number of documents a Get finds; db.mu is held
// (read).
func (db *DB) documents() (int64, error) {
	c := &db.docCount
	c.mu.Lock()
	defer c.mu.Unlock()
	v := db.lockedView()
	var newest *memtable.Memtable
	if len(v.frozen) > 0 {
		newest = v.frozen[0]
	}
	if c.st == v.st && c.mem == v.live && c.writes == v.live.Writes() && c.frozen == len(v.frozen) && c.newest == newest {
		return c.n, nil
	}
	n := v.st.docs
	for i := range v.layers() {
		for id, d := range v.layer(i).Docs() {
			was, err := v.storedBelow(id, i)
			if err != nil {
				return 0, err
			}
			switch {
			case d.Live && !was:
				n++
			case !d.Live && was:
				n--
			}
		}
	}
	c.st, c.mem, c.writes, c.frozen, c.newest, c.n = v.st, v.live, v.live.Writes(), len(v.frozen), newest, n
	return n, nil
}

// storedBelow reports whether id is stored in the layers of v under
// memtable i: the older memtables, then the flushed state.
func (v *view) storedBelow(id uint64, i int) (bool, error) {
	for j := i + 1; j < v.layers(); j++ {
		if d, ok := v.layer(j).Get(id); ok {
			return d.Live, nil
		}
	}
	_, c, err := v.st.snap.Get(format.DocKey(id))
	if errors.Is(err, store.ErrKeyNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, c.Close()
}
