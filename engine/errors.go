package engine

import (
	"errors"
	"fmt"
	"iter"
	"strings"

	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
)

// Errors; match them with errors.Is. Every error the engine returns for
// damaged data matches ErrCorrupt, also when it comes from a lower layer
// (codec, huffman, wal), and says where: a *BlockError for a table block or
// its pending list, a wal.CorruptError for the write-ahead log, a key or a
// file otherwise.
var (
	// ErrClosed: the DB was closed.
	ErrClosed = errors.New("engine: closed")
	// ErrReadOnly: a write on a DB opened read-only, or a writable open on
	// a read-only file system.
	ErrReadOnly = store.ErrReadOnly
	// ErrOptions: invalid options, or options that contradict the stored index.
	ErrOptions = errors.New("engine: invalid options")
	// ErrNotFound: no document has the id.
	ErrNotFound = errors.New("engine: not found")
	// ErrDistance: a query's k exceeds the index's K.
	ErrDistance = errors.New("engine: distance above the index's K")
	// ErrCorrupt: stored data failed a check; the message says where.
	ErrCorrupt = format.ErrCorrupt
	// ErrInput: a malformed argument (name too long, etc.).
	ErrInput = errors.New("engine: invalid input")
	// ErrNotIndex: the folder holds no index (and, to create one, is not
	// empty).
	ErrNotIndex = store.ErrNotIndex
	// ErrLocked: another DB, in this process or another, has the index
	// open (one at a time: share it through a server).
	ErrLocked = store.ErrLocked
	// ErrDiskFull: a write needed disk space there was not. Nothing
	// acknowledged is lost: free some space and write again (the engine
	// retries its flush by itself), or reopen the index.
	ErrDiskFull = store.ErrDiskFull
	// ErrLoadConflict: Load found writes it would race (a writer committed
	// between Load's check for an empty index and its start); retry it.
	ErrLoadConflict = errors.New("engine: Load raced other writes; retry")
	// ErrApplied: Apply was given a commit whose position is not above
	// the last one applied (DB.Applied); nothing of it was written. A
	// replicated log delivered again is applied once.
	ErrApplied = errors.New("engine: position already applied")
)

// BlockError locates a problem in one block of a permuted table: the table
// and the block's key (its last permuted fingerprint, as Check and the
// block directory name it). It matches ErrCorrupt when the block or its
// pending list is damaged, and whatever Err matches otherwise (an I/O
// error reading it).
type BlockError = format.BlockError

// StatsError is Stats' error when some figures could not be measured: the
// Stats returned with it hold every other figure, and the fields it names
// are zero. It matches what Err matches (ErrCorrupt where Pebble found
// damage).
type StatsError struct {
	Fields []string // names of the Stats fields left zero
	Err    error
}

func (e *StatsError) Error() string {
	return fmt.Sprintf("engine: stats: %s not measured: %v", strings.Join(e.Fields, ", "), e.Err)
}

func (e *StatsError) Unwrap() error { return e.Err }

// storeErr makes damage that Pebble found (a checksum that failed in one
// of its files: the message names the file and block) match ErrCorrupt.
func storeErr(err error) error {
	if err != nil && store.IsCorruption(err) && !errors.Is(err, ErrCorrupt) {
		return fmt.Errorf("%w: %w", ErrCorrupt, err)
	}
	return err
}

// storeSeq applies storeErr to the errors of seq.
func storeSeq[T any](seq iter.Seq2[T, error]) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		for v, err := range seq {
			if !yield(v, storeErr(err)) {
				return
			}
		}
	}
}

// checkDistance refuses a query distance the index cannot answer.
func (db *DB) checkDistance(k int) error {
	if k < 0 || k > db.design.K {
		return fmt.Errorf("%w: k %d: the index answers distances 0 to %d", ErrDistance, k, db.design.K)
	}
	return nil
}
