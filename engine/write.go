package engine

import (
	"context"
	"errors"
	"fmt"
)

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
