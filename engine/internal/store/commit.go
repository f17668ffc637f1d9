package store

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/engine/internal/format"
)

// Every write the engine makes to Pebble is an ingested sstable: Pebble's
// own write-ahead log is off (the engine's log covers whatever Pebble does
// not hold yet), and its memtable stays empty. So a flush is written once,
// not twice, and an error writing it (a full disk) comes back to the
// engine, which owns the file, rather than to Pebble's background flushes,
// which retry without end and treat a failed log write as fatal.

// TmpPrefix starts the names of the engine's scratch folders in an index
// directory: sstables being written for an ingest. A crash may leave
// them; a writable open removes them.
const TmpPrefix = "tmp-"

// headroom is the free space a flush leaves on the disk beyond what it
// writes: Pebble needs some to record the new files in its MANIFEST (a
// failed MANIFEST write is fatal to Pebble) and to compact.
const headroom = 4 << 20

// Writer takes a Commit's writes, in key order.
type Writer interface {
	Set(key, value []byte) error
	Delete(key []byte) error
	Merge(key, value []byte) error
}

// Writes is a run of writes in key order that Commit streams into its
// sstable as it makes it: a flush's documents and postings go from the
// memtable to the file without a second copy in memory. Each may be called
// more than once and must write the same each time.
type Writes struct {
	Size uint64 // about the bytes written: the room Commit checks for
	Each func(Writer) error
}

// BatchWrites is the writes of b, in key order, a key's last write only
// (a merge must be a key's only write: it would need the one before). A
// batch already in order, as a flush makes them, is streamed as it is.
func (s *Store) BatchWrites(batch *Batch) Writes {
	b := batch.b
	return Writes{Size: uint64(b.Len()), Each: func(w Writer) error {
		inOrder, err := s.batchInOrder(b)
		if err != nil {
			return err
		}
		if inOrder {
			return eachBatchOp(b, func(op batchOp) error { return writeOp(w, op) })
		}
		ops, err := s.batchOps(b, nil)
		if err != nil {
			return err
		}
		for _, op := range ops {
			if err := writeOp(w, op); err != nil {
				return err
			}
		}
		return nil
	}}
}

// writeOp gives op to w.
func writeOp(w Writer, op batchOp) error {
	switch op.kind {
	case pebble.InternalKeyKindSet:
		return w.Set(op.key, op.value)
	case pebble.InternalKeyKindDelete:
		return w.Delete(op.key)
	case pebble.InternalKeyKindMerge:
		return w.Merge(op.key, op.value)
	}
	return fmt.Errorf("engine: a flush's batch holds a write of kind %v", op.kind)
}

// Commit makes parts durable in Pebble, atomically: it writes them as one
// sstable and ingests it. Every key of a part must sort before the next
// part's.
func (s *Store) Commit(ctx context.Context, parts ...Writes) error {
	size := uint64(0)
	for _, p := range parts {
		size += p.Size
	}
	if size == 0 {
		return nil
	}
	if err := s.CheckRoom(size); err != nil {
		return err
	}
	dir, err := MkdirTemp(s.fs, s.dir, TmpPrefix)
	if err != nil {
		return DiskErr("making a scratch folder", err)
	}
	defer s.fs.RemoveAll(dir)
	path := filepath.Join(dir, "commit.sst") // the folder is this Commit's own
	n, err := s.writeSST(path, parts)
	if err != nil {
		return DiskErr("writing "+path, err)
	}
	if n == 0 {
		return nil
	}
	// Again now that the sstable is written: the log may have written
	// meanwhile (it stops short of 2 x headroom, LogRoom), and the
	// MANIFEST record of the ingest must fit.
	if err := s.CheckRoom(0); err != nil {
		return err
	}
	if err := s.db.Ingest(ctx, []string{path}); err != nil {
		return DiskErr("ingesting "+path, err)
	}
	return nil
}

// CheckRoom refuses a write of size bytes that would leave less than
// headroom on the disk.
func (s *Store) CheckRoom(size uint64) error {
	du, err := s.fs.GetDiskUsage(s.dir)
	if err != nil {
		return nil // unknown: the write itself will say
	}
	if du.AvailBytes < size+headroom {
		return fmt.Errorf("%w: %s has %d bytes free, a flush needs about %d and keeps %d free", ErrDiskFull, s.dir, du.AvailBytes, size, headroom)
	}
	return nil
}

// writeSST writes parts into a new sstable at path and returns how many
// keys it holds.
func (s *Store) writeSST(path string, parts []Writes) (int, error) {
	f, err := s.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return 0, err
	}
	w := &countingWriter{w: sstable.NewWriter(objstorageprovider.NewFileWritable(f), s.WriterOptions(0))}
	for _, p := range parts {
		if err = p.Each(w); err != nil {
			break
		}
	}
	if cerr := w.w.Close(); err == nil {
		err = cerr
	}
	return w.n, err
}

// countingWriter counts the keys written to an sstable.
type countingWriter struct {
	w *sstable.Writer
	n int
}

func (c *countingWriter) Set(k, v []byte) error   { c.n++; return c.w.Set(k, v) }
func (c *countingWriter) Delete(k []byte) error   { c.n++; return c.w.Delete(k) }
func (c *countingWriter) Merge(k, v []byte) error { c.n++; return c.w.Merge(k, v) }

// batchInOrder reports whether b's keys are in strictly increasing order,
// each written once.
func (s *Store) batchInOrder(b *pebble.Batch) (bool, error) {
	cmp := s.opts.Comparer.Compare
	var prev []byte
	inOrder := true
	err := eachBatchOp(b, func(op batchOp) error {
		if prev != nil && cmp(prev, op.key) >= 0 {
			inOrder = false
			return errStop
		}
		prev = op.key
		return nil
	})
	if err == errStop {
		err = nil
	}
	return inOrder, err
}

// errStop ends an eachBatchOp early.
var errStop = errors.New("stop")

// eachBatchOp calls fn with each write of b, in the batch's order, until
// fn fails.
func eachBatchOp(b *pebble.Batch, fn func(batchOp) error) error {
	r := b.Reader()
	for {
		kind, k, v, ok, err := r.Next()
		if err != nil {
			return format.Corrupt("a flush's batch", err)
		}
		if !ok {
			return nil
		}
		if err := fn(batchOp{key: k, value: v, kind: kind}); err != nil {
			return err
		}
	}
}

// batchOp is one write of a batch.
type batchOp struct {
	key, value []byte
	kind       pebble.InternalKeyKind
}

// batchOps appends b's writes to ops in key order, the last write of a
// key only (a merge must be a key's only write: it would need the one
// before).
func (s *Store) batchOps(b *pebble.Batch, ops []batchOp) ([]batchOp, error) {
	err := eachBatchOp(b, func(op batchOp) error {
		switch op.kind {
		case pebble.InternalKeyKindSet, pebble.InternalKeyKindDelete, pebble.InternalKeyKindMerge:
			ops = append(ops, op)
			return nil
		}
		return fmt.Errorf("engine: a flush's batch holds a write of kind %v", op.kind)
	})
	if err != nil {
		return ops, err
	}
	cmp := s.opts.Comparer.Compare
	byKey := func(a, b batchOp) int { return cmp(a.key, b.key) }
	if !slices.IsSortedFunc(ops, byKey) {
		slices.SortStableFunc(ops, byKey)
	}
	w := 0
	for i := range ops {
		if i+1 < len(ops) && cmp(ops[i].key, ops[i+1].key) == 0 {
			if ops[i+1].kind == pebble.InternalKeyKindMerge {
				return ops, fmt.Errorf("engine: a flush's batch merges into key %x after writing it", ops[i].key)
			}
			continue
		}
		ops[w] = ops[i]
		w++
	}
	return ops[:w], nil
}

// RemoveScratch removes the scratch folders a crash left in the index
// directory.
func (s *Store) RemoveScratch() error {
	names, err := s.fs.List(s.dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		path := filepath.Join(s.dir, name)
		if dir, err := IsDir(s.fs, path); err != nil {
			return err
		} else if dir && strings.HasPrefix(name, TmpPrefix) {
			if err := s.fs.RemoveAll(path); err != nil {
				return err
			}
		}
	}
	return nil
}

// logStat is how often, in bytes appended, LogRoom asks the disk for its
// free space when it is far from full.
const logStat = 64 << 20

// LogRoom refuses a log record of n bytes that would leave less than twice
// headroom on the disk, so that the log never takes the room a flush keeps
// for Pebble's MANIFEST (Commit). commitMu is held. The disk is asked
// again when the last answer, less what the log wrote since, comes near
// that, and every logStat bytes otherwise (others write to the disk too).
func (s *Store) LogRoom(n int) error {
	s.logFree -= int64(n)
	s.logSinceStat += int64(n)
	if s.logFree > 8*headroom && s.logSinceStat < logStat {
		return nil
	}
	du, err := s.fs.GetDiskUsage(s.dir)
	if err != nil {
		s.logFree, s.logSinceStat = 1<<62, 0 // unknown: the write itself will say
		return nil
	}
	s.logFree, s.logSinceStat = int64(du.AvailBytes)-int64(n), 0
	if du.AvailBytes < uint64(n)+2*headroom {
		s.logFree = 0 // ask again next time
		return fmt.Errorf("%w: %s has %d bytes free, the log keeps %d free for flushes", ErrDiskFull, s.dir, du.AvailBytes, 2*headroom)
	}
	return nil
}
