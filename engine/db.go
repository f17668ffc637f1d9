// Package engine is the simhashdb database: a persistent index of 64-bit
// SimHash fingerprints on Pebble that answers "which stored documents lie
// within Hamming distance k of this fingerprint", the system of Manku, Jain
// and Das Sarma (WWW 2007) as an embedded store.
//
// # Data model
//
// A document is a uint64 id with a fingerprint and an optional short name
// (a URL, a path) that queries return. Several documents may share one
// fingerprint. Inserting an existing id replaces its fingerprint and name.
//
// # Storage
//
// One Pebble database holds, behind one-byte key prefixes: metadata (format
// version, table design, Huffman codes, counters), documents (id ->
// fingerprint, name), postings (fingerprint, id -> name), and one keyspace
// per permuted table whose keys are the last permuted fingerprint of a block
// and whose values are the paper's Huffman-coded blocks (package codec). A
// small directory of block keys and sizes is kept in memory, as the paper
// keeps its block index, so that a warm probe finds its block without asking
// Pebble.
//
// # Writes
//
// Insert and Delete append to the engine's write-ahead log (package wal);
// concurrent writers share one write and fsync. A write is acknowledged once
// it is durable as the SyncMode promises, and becomes visible to queries in
// the order of the log. The memtable keeps recent writes searchable; when it
// fills, a flush merges it into the tables, commits the result to Pebble
// atomically with the documents and postings, and then drops the log
// segments it covers. A flush appends a block's new fingerprints to the
// block's pending list (up to 96, stored beside it and merged with it by
// every reader) without reading the block or the list, and rewrites the
// block only when the list is full or a fingerprint leaves, so that its
// cost follows what it adds, not the size of the index. The tables are
// merged on every core. Unless set, the memtable's budget grows with the
// index (5 bytes per fingerprint, 64 MiB to 1 GiB), so that a flush adds
// several fingerprints to each block it touches however large the index.
// Each new fingerprint costs a flush one postings look-up, to tell it from
// one stored already; postings keys split after the fingerprint
// (store.KeyOrder), so Pebble's bloom filters answer most of those look-ups
// without reading a data block.
//
// # Queries
//
// A query of distance k <= K probes every table: it permutes the query, scans
// the blocks whose range shares the table's top p_i bits, and keeps the
// entries within distance k (the distance is the same in permuted space).
// Memtable matches are added, deleted documents dropped, and the result
// sorted by distance.
//
// # Contexts
//
// A call whose context is done before it starts returns the context's
// error and changes nothing. Calls that run long (Load, Flush, Warm, Check,
// and the streams: Docs, FindAll, Clusters, Stars, QueryBatch) also stop
// when it is done while they run; a write already in the log stays
// acknowledged.
package engine

import (
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/memtable"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/engine/internal/tasks"
	"github.com/simhashdb/simhashdb/engine/internal/uring"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/vfs"
	"github.com/simhashdb/simhashdb/wal"
)

// Doc is a stored document.
type Doc struct {
	ID          uint64
	Fingerprint uint64
	// Name is optional (a URL, a path), at most MaxName bytes.
	Name string
	// Sketch is the verifier of a text document (package sketch), kept
	// beside its fingerprint: exactly DB.SketchSize bytes in an index that
	// keeps sketches, empty in one that does not. Its bytes are held in a
	// string, so that a Doc stays comparable and a query's answer shares
	// them with the read that found it.
	Sketch string
}

// MaxName is the longest document name, in bytes.
const MaxName = format.MaxName

// Match is a document found by a query.
type Match struct {
	Doc
	Distance int
}

// Near is a stored fingerprint found by QueryFingerprints: held by at
// least one document, within the query's distance.
type Near struct {
	Fingerprint uint64
	Distance    int
}

// CompareNear orders fingerprints as QueryFingerprints answers them:
// nearest first, then ascending (for slices.SortFunc).
func CompareNear(a, b Near) int {
	if a.Distance != b.Distance {
		return a.Distance - b.Distance
	}
	return cmpU64(a.Fingerprint, b.Fingerprint)
}

// Nearer orders matches as a query answers them: nearest first, then by
// id (for slices.SortFunc).
func Nearer(a, b Match) int {
	if a.Distance != b.Distance {
		return a.Distance - b.Distance
	}
	return cmpU64(a.ID, b.ID)
}

// reader is what queries read from: a snapshot of the store.
type reader = store.Reader

// DB is an open index. Its methods are safe for concurrent use.
type DB struct {
	dir  string
	opts Options
	log  *slog.Logger
	// store is the Pebble store: metadata, documents, postings and tables.
	store *store.Store
	fs    vfs.FS   // the files of Pebble, of the log and of the engine's flushes
	wal   *wal.Log // nil when read-only
	// ring is what Pebble reads sstables through (nil: pread, as
	// ReadsBuffered explains); direct, that it reads with O_DIRECT what
	// the page cache does not hold (Options.Reads).
	ring   *uring.Ring
	direct bool
	design *permutation.Design
	block  int
	sketch int // the bytes of each document's sketch, 0 for none
	cache  *cache.Cache
	budget cache.Budget // divides Options.CacheSize between cache and Pebble's

	// Locks are taken in this order: flushMu, dedupMu, commitMu, mu; the
	// cache's and the store's own locks come after mu. st is replaced by
	// install alone (state.go), with flushMu held.
	mu   sync.RWMutex
	cond *sync.Cond // on mu: publication order, stalls, flush completion
	st   *state
	mem  *memtable.Memtable // the live memtable, which writes go to
	// frozen are the memtables that no write changes any more and no flush
	// has merged yet, newest first (view.go). The slice is replaced, never
	// written, so that pinned views share it.
	frozen []*memtable.Memtable
	// sealSeg is the log segment that starts after the records of every
	// frozen memtable, when sealed: a freeze by a read leaves it unknown
	// until a flush starts a segment.
	sealSeg   uint64
	sealed    bool
	published uint64 // sequence number of the last write applied to mem
	admitting int64  // memtable bytes of the commits stall let in, not yet in mem
	closed    bool
	bgErr     error          // a failed background flush
	readers   sync.WaitGroup // pinned views (pinView); Close waits for them
	// stallHead is the turn of the writer stall lets in next, stallTail
	// the next turn to give; stallGone the turns whose writers left
	// before theirs came.
	stallHead, stallTail uint64
	stallGone            map[uint64]bool
	// docCount keeps Stats' count of the documents a reader finds.
	docCount docCount
	// missReads counts the block reads that probes have in flight together
	// (table.Reader.readMisses).
	missReads atomic.Int64
	// readWorkers run those reads (table.Reader.Workers), as many as
	// readWorkers at most kept.
	readWorkers *tasks.Workers

	commitMu sync.Mutex // orders WAL appends and sequence numbers
	appended uint64
	// position is the position of the last commit appended that had one
	// (Commit.Position; commitMu), applied that of the last published
	// (db.mu to write).
	position uint64
	applied  atomic.Uint64
	dedupMu  sync.Mutex // serialises InsertIfNew
	flushMu  sync.Mutex // one flush (or check) at a time

	flushCh chan struct{}
	quit    chan struct{}
	bg      sync.WaitGroup
}

// Path returns the index's folder, as Open was given it.
func (db *DB) Path() string { return db.dir }

// Design returns a copy of the index's table design: changing it changes
// nothing in the index.
func (db *DB) Design() *permutation.Design { return db.design.Clone() }

// K returns the largest distance the index answers.
func (db *DB) K() int { return db.design.K }

// Close makes every acknowledged write durable and releases the index. The
// memtable is not flushed: the next Open replays the log. Close waits for
// reads that run without holding the index (FindAll, Clusters, Stars,
// Docs, QueryBatch) to end: end an iteration of Docs before Close.
func (db *DB) Close() error {
	db.commitMu.Lock()
	db.mu.Lock()
	if db.closed {
		db.mu.Unlock()
		db.commitMu.Unlock()
		return ErrClosed
	}
	db.closed = true
	db.cond.Broadcast()
	db.mu.Unlock()
	db.commitMu.Unlock()
	close(db.quit)
	db.bg.Wait()
	db.readers.Wait()
	db.flushMu.Lock() // a Flush called by a user may still run
	defer db.flushMu.Unlock()
	return db.close()
}

// readWorkers is how many goroutines stay to read the blocks of cold
// probes: the reads probes issue together across queries (table's
// maxMissReads).
const readWorkers = 32

func (db *DB) close() error {
	var errs []error
	if db.wal != nil {
		errs = append(errs, db.wal.Close())
	}
	if db.st != nil && db.st.snap != nil {
		errs = append(errs, db.st.unref())
	}
	errs = append(errs, db.store.Close())
	db.readWorkers.Close()
	if db.ring != nil {
		errs = append(errs, db.ring.Close())
	}
	return errors.Join(errs...)
}
