package engine

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/memtable"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/wal"
)

// Insert stores a document, replacing any with the same id. It returns once
// the write is durable as Options.Sync promises; it is visible to queries
// from then on.
func (db *DB) Insert(ctx context.Context, d Doc) error {
	return db.write(ctx, []Doc{d}, nil, 0)
}

// InsertBatch stores many documents in one commit: after a crash, and to
// every reader, either all of them are stored or none is. A batch of any
// size is atomic; its memory is the caller's, and the log holds it in
// records of at most a few MiB that replay applies only when it has read
// the last one.
func (db *DB) InsertBatch(ctx context.Context, docs []Doc) error {
	return db.write(ctx, docs, nil, 0)
}

// Delete removes documents by id, in one commit as InsertBatch; ids that
// are not stored are ignored.
func (db *DB) Delete(ctx context.Context, ids ...uint64) error {
	return db.write(ctx, nil, ids, 0)
}

// Commit is one atomic change of the index: documents inserted (replacing
// any with their ids), then ids deleted.
type Commit struct {
	Insert []Doc
	Delete []uint64
	// Position, when not 0, is the commit's place in a sequence that the
	// application applies in order, such as a replicated log's sequence
	// numbers. It must be above every position applied before (Applied),
	// or the commit is refused whole with ErrApplied: a log delivered
	// again is applied once. It is written with the commit, atomically: after
	// a crash, Applied says which commits the index holds (every one up
	// to it, none after), and the application resumes its log there.
	Position uint64
}

// Apply writes c in one commit, as InsertBatch does, with its position if
// it has one. A commit with a position and nothing else records the
// position alone (the application read its log that far).
func (db *DB) Apply(ctx context.Context, c Commit) error {
	return db.write(ctx, c.Insert, c.Delete, c.Position)
}

// Applied returns the position of the last commit applied that had one
// (Commit.Position), or 0 when none had.
func (db *DB) Applied() uint64 { return db.applied.Load() }

// validDoc refuses a document the index does not store: a name longer
// than MaxName, or one that holds a NUL byte (no URL or path does, and a
// run of them in a log record would look like a power cut's hole).
func validDoc(d *Doc) error {
	switch name := d.Name; {
	case len(name) > MaxName:
		return fmt.Errorf("%w: document %d: name of %d bytes, at most %d", ErrInput, d.ID, len(name), MaxName)
	case strings.IndexByte(name, 0) >= 0:
		return fmt.Errorf("%w: document %d: name holds a NUL byte at offset %d", ErrInput, d.ID, strings.IndexByte(name, 0))
	}
	return nil
}

func (db *DB) write(ctx context.Context, docs []Doc, deletes []uint64, pos uint64) (err error) {
	defer func() { err = storeErr(err) }()
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	docs, err = db.storedDocs(docs)
	if err != nil {
		return err
	}
	if len(docs)+len(deletes) == 0 && pos == 0 {
		return nil
	}
	names := int64(0)
	for i := range docs {
		names += int64(len(docs[i].Name))
	}
	cost := memtable.WriteCost(len(db.design.Tables), len(docs), names, len(deletes))
	if err := db.stall(cost); err != nil {
		return err
	}
	log, lsn, seq, err := db.appendCommit(docs, names, deletes, pos)
	if err != nil {
		db.admitted(cost)
		return err
	}
	werr := log.Wait(ctx, lsn)
	// Publish even when waiting failed: the record is in the log, and the
	// memtable must follow the log's order.
	db.publish(seq, docs, deletes, pos, cost)
	if werr != nil {
		return store.DiskErr("writing the log", werr)
	}
	return nil
}

// appendCommit appends a commit's records (docs with names bytes of
// names, deletes, and position pos unless 0) to the log and returns the
// log, the last record's LSN and the commit's sequence number. The records
// of one commit are appended under one hold of commitMu: nothing comes
// between them, and no flush starts a segment among them.
func (db *DB) appendCommit(docs []Doc, names int64, deletes []uint64, pos uint64) (*wal.Log, wal.LSN, uint64, error) {
	size := format.CommitBytes(len(docs), int(names), len(deletes))
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	db.mu.RLock()
	closed := db.closed
	db.mu.RUnlock()
	if closed {
		return nil, 0, 0, ErrClosed
	}
	if pos != 0 && pos <= db.position {
		return nil, 0, 0, fmt.Errorf("%w: position %d, applied up to %d", ErrApplied, pos, db.position)
	}
	log, err := db.liveLog()
	if err == nil {
		err = db.store.LogRoom(size)
	}
	if err != nil {
		return nil, 0, 0, err
	}
	var lsn wal.LSN
	for p, typ := range commitParts(docs, deletes, pos) {
		if lsn != 0 {
			// A large commit: its records go out as they are made, not
			// all at once from the log's buffer.
			if err = log.WriteOut(); err != nil {
				return nil, 0, 0, store.DiskErr("appending to the log", err)
			}
		}
		if lsn, err = log.Append(typ, p); err != nil {
			// The parts appended before are not committed: replay drops
			// them without the last record.
			return nil, 0, 0, store.DiskErr("appending to the log", err)
		}
	}
	db.appended++
	if pos != 0 {
		db.position = pos
	}
	return log, lsn, db.appended, nil
}

// publish applies commit seq (at position pos unless 0) to the live
// memtable, after every commit before it: the memtable follows the log's
// order. The commit's cost, which stall let in, leaves the admitted count
// as it enters the memtable (admitted, under the same hold of db.mu).
func (db *DB) publish(seq uint64, docs []Doc, deletes []uint64, pos uint64, cost int64) {
	db.mu.Lock()
	for db.published != seq-1 {
		db.cond.Wait()
	}
	for _, d := range docs {
		db.mem.Insert(d.ID, d.Fingerprint, d.Name)
	}
	for _, id := range deletes {
		db.mem.Delete(id)
	}
	if pos != 0 {
		db.mem.SetPosition(pos)
		db.applied.Store(pos)
	}
	db.published = seq
	db.admitting -= cost
	db.cond.Broadcast()
	full := db.unflushed() >= db.memtableBudget()
	db.mu.Unlock()
	if full {
		db.signalFlush()
	}
}

// currentLog returns the log being written (nil when read-only).
func (db *DB) currentLog() *wal.Log {
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	return db.wal
}

// liveLog returns the log to append to; commitMu is held. A log that
// failed on a full disk is replaced by a new segment, so that writes work
// again once there is room: the records of the failed write are in the
// memtable (write publishes them), and the old segment may end in a part
// of them, which the new segment notes as a torn tail for replay to skip. Any other failure stays: an fsync that failed
// leaves what the disk holds unknown.
func (db *DB) liveLog() (*wal.Log, error) {
	err := db.wal.Err()
	if err == nil {
		return db.wal, nil
	}
	if !errors.Is(err, syscall.ENOSPC) {
		return nil, fmt.Errorf("engine: the log failed earlier; reopen the index: %w", err)
	}
	old := db.wal
	if err := db.newLog(old.End()); err != nil {
		return nil, err
	}
	old.Close() // its error is the one above
	db.log.Info("simhashdb: started a new log segment after a full disk", "segment", db.wal.Segment())
	return db.wal, nil
}

// memtableBudget is the memtable size that triggers a flush now; db.mu or
// flushMu is held (db.st is replaced under both).
func (db *DB) memtableBudget() int64 { return db.opts.memtableBudget(db.st.fps) }

// memtablesMax is the memory of the memtables at which writes wait for a
// flush: one budget filling while one is flushed.
func (db *DB) memtablesMax() int64 { return 2 * db.memtableBudget() }

// stall holds back a writer whose commit would add cost to the memtables
// while it finds no room for it within memtablesMax: the live memtable
// fills to its budget while the frozen ones are flushed, so that the
// memtables hold at most two budgets, or a single commit larger than that
// once they are empty. Writers are let in in the order they came: a large
// commit waiting for room holds back the small ones after it, which would
// otherwise take the room as it comes and keep it waiting. A writer let in
// counts its cost as admitting until its commit is in the memtable
// (publish) or has failed (admitted). While flushes fail on a full disk,
// writes go on into the log up to that point, and fail with ErrDiskFull past it rather than wait.
func (db *DB) stall(cost int64) error {
	if err := db.store.Damaged(); err != nil {
		return err
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	turn := db.stallTail
	db.stallTail++
	defer db.leaveStall(turn)
	for {
		if db.closed {
			return ErrClosed
		}
		held := db.unflushed() + db.admitting
		over := held > 0 && held+cost > db.memtablesMax()
		switch {
		case db.bgErr != nil && (over || !errors.Is(db.bgErr, ErrDiskFull)):
			return db.bgErr
		case !over && turn == db.stallHead:
			db.admitting += cost
			if hook := db.opts.knobs.letIn; hook != nil {
				hook(cost)
			}
			return nil
		}
		// The memtables may be under their budget (frozen by a read, or
		// a commit too large for what is left): the flush that makes
		// room may not have been asked for.
		db.signalFlush()
		if hook := db.opts.knobs.stalled; hook != nil {
			hook(cost)
		}
		db.cond.Wait()
	}
}

// leaveStall notes that the writer of turn left stall, let in or not;
// db.mu is held. The turn passes to the first writer still waiting.
func (db *DB) leaveStall(turn uint64) {
	if turn == db.stallHead {
		db.stallHead++
	} else {
		db.stallGone[turn] = true // an error, out of turn
	}
	for db.stallGone[db.stallHead] {
		delete(db.stallGone, db.stallHead)
		db.stallHead++
	}
	db.cond.Broadcast()
}

// admitted ends what stall let in for a commit that failed before
// publish (which ends it for the others).
func (db *DB) admitted(cost int64) {
	db.mu.Lock()
	db.admitting -= cost
	db.cond.Broadcast()
	db.mu.Unlock()
}

func (db *DB) signalFlush() {
	select {
	case db.flushCh <- struct{}{}:
	default:
	}
}

// flusher flushes the memtable when a write signals it is full. A flush
// that fails on a full disk is retried, less and less often, until one
// succeeds; any other failure stops writes until the index is reopened.
func (db *DB) flusher() {
	defer db.bg.Done()
	var retry <-chan time.Time
	wait := time.Duration(0)
	for {
		select {
		case <-db.quit:
			return
		case <-db.flushCh:
		case <-retry:
		}
		retry = nil
		err := db.flush()
		switch {
		case err == nil:
			wait = 0
			continue
		case errors.Is(err, ErrClosed):
			return
		}
		db.mu.Lock()
		first := db.bgErr == nil
		db.bgErr = fmt.Errorf("engine: background flush: %w", err)
		db.cond.Broadcast()
		db.mu.Unlock()
		if !errors.Is(err, ErrDiskFull) {
			db.log.Error("simhashdb: flush failed; writes stop until the index is reopened", "err", err)
			return
		}
		if first {
			db.log.Error("simhashdb: flush failed on a full disk; retrying", "err", err)
		}
		wait = min(max(2*wait, minFlushRetry), maxFlushRetry)
		retry = time.After(wait)
	}
}

// The flusher's waits between retries on a full disk.
const (
	minFlushRetry = 50 * time.Millisecond
	maxFlushRetry = 5 * time.Second
)

// InsertIfNew is the crawler's decision: if no stored document lies within
// distance k of d's fingerprint, it inserts d and returns inserted = true;
// otherwise it returns the near-duplicates and stores nothing. Calls of
// InsertIfNew are atomic with respect to each other (two near-duplicates
// offered at once: one is inserted, the other is told about it).
func (db *DB) InsertIfNew(ctx context.Context, d Doc, k int) (matches []Match, inserted bool, err error) {
	return db.InsertIfNewFunc(ctx, d, k, nil)
}

// InsertIfNewFunc is InsertIfNew where a stored document within k counts
// as a near-duplicate only if near, when not nil, says so (a verifier of
// the documents' text: package textindex); it returns those that count.
// It is atomic with respect to InsertIfNew and other InsertIfNewFunc calls.
func (db *DB) InsertIfNewFunc(ctx context.Context, d Doc, k int, near func(Match) bool) (matches []Match, inserted bool, err error) {
	db.dedupMu.Lock()
	defer db.dedupMu.Unlock()
	if matches, err = db.Query(ctx, d.Fingerprint, k); err != nil {
		return nil, false, err
	}
	if near != nil {
		matches = slices.DeleteFunc(matches, func(m Match) bool { return !near(m) })
	}
	if len(matches) > 0 {
		return matches, false, nil
	}
	if err := db.Insert(ctx, d); err != nil {
		return nil, false, err
	}
	return nil, true, nil
}

// commitParts yields the log records of a commit that inserts docs, then
// deletes deletes, at position pos unless 0, each with its type
// (format.CommitParts).
func commitParts(docs []Doc, deletes []uint64, pos uint64) iter.Seq2[[]byte, byte] {
	return format.CommitParts(len(docs), func(i int) format.Op {
		return format.Op{ID: docs[i].ID, Fingerprint: docs[i].Fingerprint, Name: docs[i].Name}
	}, deletes, pos)
}
