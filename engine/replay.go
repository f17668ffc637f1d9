package engine

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/memtable"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/wal"
)

// The write-ahead log at open: replayed into the memtable (flushing as it
// fills), then a new segment for the writes to come.

// openWAL opens the write-ahead log (unless read-only) and replays into the
// memtable what the tables do not hold yet. A writable open flushes
// whenever the memtable reaches its budget during the replay: memory stays
// bounded, and an open that dies part way has made progress that the next
// one keeps.
func (db *DB) openWAL() error {
	dir := filepath.Join(db.dir, walDir)
	if !db.opts.ReadOnly {
		if err := db.store.RemoveScratch(); err != nil {
			return fmt.Errorf("engine: %w", err)
		}
		// Open the log first: it starts a new segment after the ones replayed.
		if err := db.newLog(wal.Position{}); err != nil {
			return err
		}
	}
	steps := 0
	r := &replayer{mem: db.mem}
	rs, err := wal.Replay(dir, db.st.walFrom, wal.ReplayOptions{FS: db.fs, Recovery: db.opts.WALRecovery, ReadOnly: db.opts.ReadOnly},
		func(end wal.Position, typ byte, payload []byte) error {
			if err := r.record(end.Segment, typ, payload); err != nil {
				return err
			}
			// Flush only between commits: the position stored with the
			// tables must not fall inside one.
			if db.opts.ReadOnly || r.inCommit() || db.mem.Size() < db.memtableBudget() {
				return nil
			}
			steps++
			if err := db.replayStep(end); err != nil {
				return err
			}
			r.mem = db.mem
			return nil
		})
	if err != nil {
		return fmt.Errorf("engine: replaying the write-ahead log: %w", walErr(err))
	}
	for _, d := range rs.Damage {
		db.log.Warn("simhashdb: discarded a damaged part of the write-ahead log", "damage", d.String())
	}
	r.endSegment()
	// The position of the last commit replayed that had one, or the
	// tables'.
	db.position = max(db.st.applied, db.mem.Position())
	db.applied.Store(db.position)
	if r.dropped > 0 {
		db.log.Info("simhashdb: dropped commits the log holds only part of (a crash while they were written; never acknowledged)", "commits", r.dropped, "ops", r.droppedOps)
	}
	if rs.Records > 0 || rs.Torn > 0 {
		db.log.Info("simhashdb: replayed the write-ahead log", "dir", dir, "segments", rs.Segments,
			"records", rs.Records, "flushes", steps, "torn_tail_bytes", rs.Torn, "unsynced_records_dropped", rs.Cut)
	}
	return nil
}

// replayStep flushes the memtable that a replay filled up to end.
func (db *DB) replayStep(end wal.Position) error {
	if _, err := db.flushMemtable(db.mem, end, false, false); err != nil {
		return err
	}
	db.mem = memtable.New(db.design)
	if err := db.wal.RemoveBefore(end.Segment); err != nil {
		return store.DiskErr("removing flushed log segments", err)
	}
	if hook := db.opts.knobs.replayStep; hook != nil {
		return hook()
	}
	return nil
}

// newLog starts a new log segment: at open, and after the log failed on a
// full disk, when cut is where the failed segment's whole records end.
func (db *DB) newLog(cut wal.Position) error {
	l, err := wal.Open(filepath.Join(db.dir, walDir), wal.Options{FS: db.fs, Sync: db.opts.Sync, Interval: db.opts.SyncPeriod, CutAt: cut})
	if err != nil {
		return store.DiskErr("starting a log segment", err)
	}
	db.wal = l
	return nil
}

// walErr makes the log's corruption errors match ErrCorrupt too.
func walErr(err error) error {
	if errors.Is(err, wal.ErrCorrupt) && !errors.Is(err, ErrCorrupt) {
		return format.Corrupt("write-ahead log", err)
	}
	return err
}

// replayer applies the log's commits to a memtable, each once its last
// record is read.
type replayer struct {
	mem *memtable.Memtable
	// parts holds the ops of the commit being read, until its RecOps
	// record. A commit's records are all in one segment (appendCommit),
	// so parts left when the segment ends were never committed: a crash
	// cut the commit off, and the next process wrote a new segment.
	parts   []format.Op
	partSeg uint64 // the segment of parts
	// dropped counts the commits cut off, droppedOps their ops.
	dropped, droppedOps int
}

// record reads one record of the log, from segment seg.
func (r *replayer) record(seg uint64, typ byte, payload []byte) error {
	if seg != r.partSeg {
		r.endSegment()
		r.partSeg = seg
	}
	if typ == format.RecOpsPart {
		return format.DecodeRecord(typ, payload, func(op format.Op) { r.parts = append(r.parts, op) })
	}
	if err := format.DecodeRecord(typ, payload, nil); err != nil {
		return err
	}
	for _, op := range r.parts {
		r.apply(op)
	}
	r.parts = r.parts[:0]
	return format.DecodeRecord(typ, payload, r.apply)
}

func (r *replayer) apply(op format.Op) {
	switch {
	case op.Position != 0:
		r.mem.SetPosition(op.Position)
	case op.Delete:
		r.mem.Delete(op.ID)
	default:
		r.mem.Insert(op.ID, op.Fingerprint, op.Name)
	}
}

// inCommit reports whether the records read so far end inside a commit.
func (r *replayer) inCommit() bool { return len(r.parts) > 0 }

// endSegment drops the parts of a commit that its segment ends inside.
func (r *replayer) endSegment() {
	if len(r.parts) > 0 {
		r.dropped++
		r.droppedOps += len(r.parts)
		r.parts = r.parts[:0]
	}
}
