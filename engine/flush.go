package engine

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"time"

	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/memtable"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/engine/internal/table"
	"github.com/simhashdb/simhashdb/wal"
)

// Flush merges the memtable into the tables and makes it durable in Pebble,
// then drops the log segments it covers.
func (db *DB) Flush(ctx context.Context) (err error) {
	defer func() { err = storeErr(err) }()
	if db.opts.ReadOnly {
		return ErrReadOnly
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return db.flush()
}

// Checkpoint writes a copy of the index as it stands into dir, a folder
// that must not exist, which Open opens as an index of its own: every
// commit acknowledged before Checkpoint began, and perhaps some after,
// with their positions (applied: the copy's Applied). It flushes first,
// then holds writers and flushes while it links Pebble's files (copies
// them on another file system) and copies the log's tail: a replica's new
// node starts from a peer's checkpoint and applies the log from applied
// on (package replica).
func (db *DB) Checkpoint(ctx context.Context, dir string) (applied uint64, err error) {
	defer func() { err = storeErr(err) }()
	if db.opts.ReadOnly {
		return 0, ErrReadOnly
	}
	if _, err := db.fs.Stat(dir); err == nil {
		return 0, fmt.Errorf("%w: checkpoint into %s: it exists; give a new folder", ErrInput, dir)
	}
	if err := db.Flush(ctx); err != nil {
		return 0, err
	}
	db.flushMu.Lock()
	defer db.flushMu.Unlock()
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	db.mu.RLock()
	closed := db.closed
	db.mu.RUnlock()
	if closed {
		return 0, ErrClosed
	}
	if err := db.wal.WriteOut(); err != nil {
		return 0, store.DiskErr("writing the log out", err)
	}
	if err := db.fs.MkdirAll(dir, 0o755); err != nil {
		return 0, err
	}
	if err := db.store.Checkpoint(dir); err != nil {
		return 0, fmt.Errorf("engine: checkpoint of the store into %s: %w", dir, err)
	}
	if err := wal.Copy(db.fs, filepath.Join(db.dir, walDir), filepath.Join(dir, walDir), db.st.walFrom.Segment); err != nil {
		return 0, fmt.Errorf("engine: checkpoint of the log into %s: %w", dir, err)
	}
	return db.position, nil
}

func (db *DB) flush() error {
	db.flushMu.Lock()
	defer db.flushMu.Unlock()
	list, seg, err := db.sealForFlush()
	if err != nil || len(list) == 0 {
		return err
	}
	start := time.Now()
	var fs flushStats
	docs := 0
	// Oldest first. Each flush but the last keeps the log position the
	// tables had: a crash between them replays writes that the tables
	// hold already, which gives the same documents again.
	for i := len(list) - 1; i >= 0; i-- {
		from := db.st.walFrom
		if i == 0 {
			from = wal.Position{Segment: seg}
		}
		s, err := db.flushMemtable(list[i], from, true, i == 0)
		if err != nil {
			return err
		}
		fs.add(s)
		docs += list[i].Len()
	}
	db.mu.Lock()
	if errors.Is(db.bgErr, ErrDiskFull) {
		db.bgErr = nil // flushes work again
		db.log.Info("simhashdb: flushed after a full disk")
	}
	db.cond.Broadcast()
	db.mu.Unlock()
	if err := db.currentLog().RemoveBefore(seg); err != nil {
		return store.DiskErr("removing flushed log segments", err)
	}
	db.log.Debug("simhashdb: flushed", "documents", docs, "memtables", len(list), "blocks_written", fs.written,
		"blocks_replaced", fs.replaced, "pending_added", fs.pended, "elapsed", time.Since(start))
	return nil
}

// sealForFlush freezes the live memtable and returns every frozen one,
// newest first, with the log segment that starts after their records. A
// new segment is started unless one already follows them all (a flush
// that failed left them so): no appends meanwhile (commitMu), every
// appended record published first.
func (db *DB) sealForFlush() ([]*memtable.Memtable, uint64, error) {
	db.commitMu.Lock()
	defer db.commitMu.Unlock()
	db.mu.Lock()
	for db.published != db.appended {
		db.cond.Wait()
	}
	closed, empty, sealed, frozen := db.closed, db.mem.Empty(), db.sealed, len(db.frozen)
	if !closed && empty && sealed {
		defer db.mu.Unlock()
		return db.frozen, db.sealSeg, nil
	}
	db.mu.Unlock()
	switch {
	case closed:
		return nil, 0, ErrClosed
	case empty && frozen == 0: // a read freezes only a memtable with writes
		return nil, 0, nil
	}
	log, err := db.liveLog()
	var seg uint64
	if err == nil {
		seg, err = log.Rotate()
	}
	if err != nil {
		return nil, 0, store.DiskErr("starting a log segment", err)
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	db.freeze()
	db.sealSeg, db.sealed = seg, true
	return db.frozen, seg, nil
}

type flushStats struct{ written, replaced, pended int }

func (s *flushStats) add(o flushStats) {
	s.written += o.written
	s.replaced += o.replaced
	s.pended += o.pended
}

// lastDocID returns the largest document id r holds; stored is false when
// it holds none.
func lastDocID(r reader) (id uint64, stored bool, err error) {
	lo, hi := format.SpaceBounds(format.SpaceDocs)
	it, err := r.NewIter(store.IterOptions{Lower: lo, Upper: hi})
	if err != nil {
		return 0, false, err
	}
	if it.Last() {
		id, err = format.ParseDocKey(it.Key())
		stored = err == nil
	}
	if err == nil {
		err = it.Error()
	}
	if cerr := it.Close(); err == nil {
		err = cerr
	}
	return id, stored, err
}

// heldBy reports whether the postings that it iterates hold fingerprint fp
// for an id that counts. An iterator's error is returned at once: Pebble
// clears it on the next seek, and a read that failed is not "not stored".
func (db *DB) heldBy(it *store.Iter, fp uint64, counts func(id uint64) bool) (bool, error) {
	for db.seekPostings(it, fp); it.Valid(); it.Next() {
		f, id, err := format.ParsePostingKey(it.Key())
		if err != nil {
			return false, err
		}
		if f != fp {
			return false, nil
		}
		if counts(id) {
			return true, nil
		}
	}
	return false, it.Error()
}

// flushMemtable commits m to Pebble at once and publishes the new state;
// frozen says m is the oldest frozen memtable, which leaves the list then,
// and split that the cache's split is sized again after it.
func (db *DB) flushMemtable(m *memtable.Memtable, walFrom wal.Position, frozen, split bool) (flushStats, error) {
	f := &flushJob{db: db, m: m, old: db.st, metaB: db.store.NewBatch(),
		orphans: map[uint64]bool{}}
	defer f.close()
	if err := f.writeDocuments(); err != nil {
		return f.stats, err
	}
	f.writePostings()
	adds, dels, err := f.tableChanges()
	if err != nil {
		return f.stats, err
	}
	old := f.old
	units, dropped, carry := old.units.Next(f.docs, f.changes)
	st := newState(slices.Clone(old.tables), f.docs, old.fps, walFrom, units)
	st.applied = max(old.applied, m.Position())
	outs, err := f.mergeTables(st, adds, dels)
	if err != nil {
		return f.stats, err
	}
	var fills []table.Filled
	for t, r := range outs {
		if r.Code != nil {
			if err := f.metaB.Set(format.MetaCodeKey(t, st.tables[t].Code()), r.Code); err != nil {
				return f.stats, err
			}
		}
		dropped = append(dropped, r.Replaced...)
		fills = append(fills, r.Fill...)
		f.stats.written += r.Written
		f.stats.pended += r.Pended
		f.stats.replaced += len(r.Replaced)
		if t == 0 {
			st.fps += int64(r.Added - r.Removed)
		}
	}
	if err := f.writeMeta(st); err != nil {
		return f.stats, err
	}
	if err := f.commit(); err != nil {
		return f.stats, err
	}
	return f.stats, db.install(st, successor{dropped: dropped, fills: fills, carry: carry, merged: frozen, split: split})
}
