package store

import (
	"context"
	"io"
	"path/filepath"
	"sync"

	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// Load is a bulk load: sstables of the bottom level written into a
// scratch folder of the store, then ingested together (no log, no
// memtable, no compaction). The disk's room is checked as Commit checks
// it: for the whole load before a file is written, and for the
// MANIFEST's record before the ingest; a write the disk has no room for
// is ErrDiskFull.
type Load struct {
	s     *Store
	dir   string
	mu    sync.Mutex
	paths []string
}

// NewLoad starts a bulk load that writes about size bytes, refused with
// ErrDiskFull if the disk has not that much room and headroom. Close
// removes what it wrote.
func (s *Store) NewLoad(size uint64) (*Load, error) {
	if err := s.CheckRoom(size); err != nil {
		return nil, err
	}
	dir, err := MkdirTemp(s.fs, s.dir, TmpPrefix)
	if err != nil {
		return nil, DiskErr("making a scratch folder", err)
	}
	return &Load{s: s, dir: dir}, nil
}

// Create starts the load's sstable named name; safe for concurrent use.
func (l *Load) Create(name string) (*SSTable, error) {
	path := filepath.Join(l.dir, name+".sst")
	f, err := l.s.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, DiskErr("creating "+path, err)
	}
	l.mu.Lock()
	l.paths = append(l.paths, path)
	l.mu.Unlock()
	return &SSTable{sstable.NewWriter(objstorageprovider.NewFileWritable(f), l.s.WriterOptions(6))}, nil
}

// SSTable is a load's sstable being written.
type SSTable struct{ w *sstable.Writer }

// Set writes key's value; keys come in increasing order.
func (t *SSTable) Set(key, value []byte) error { return t.w.Set(key, value) }

// Close finishes the file.
func (t *SSTable) Close() error { return t.w.Close() }

// Ingest makes every sstable of the load part of the store, atomically
// and durably.
func (l *Load) Ingest(ctx context.Context) error {
	if err := l.s.CheckRoom(0); err != nil {
		return err
	}
	if err := l.s.db.Ingest(ctx, l.paths); err != nil {
		return DiskErr("ingesting a bulk load", err)
	}
	return nil
}

// CheckRoom refuses with ErrDiskFull a load that is to write size more
// bytes than the disk has room and headroom for: a load that learns its
// size as it goes checks before each part.
func (l *Load) CheckRoom(size uint64) error { return l.s.CheckRoom(size) }

// CreateScratch creates a file of the load named name that is not
// ingested (a run of an external sort); Close removes it with the rest.
func (l *Load) CreateScratch(name string) (io.WriteCloser, error) {
	path := filepath.Join(l.dir, name)
	f, err := l.s.fs.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return nil, DiskErr("creating "+path, err)
	}
	return f, nil
}

// OpenScratch opens the load's scratch file name for reading.
func (l *Load) OpenScratch(name string) (io.ReadCloser, error) {
	path := filepath.Join(l.dir, name)
	f, err := l.s.fs.Open(path)
	if err != nil {
		return nil, DiskErr("opening "+path, err)
	}
	return f, nil
}

// Close removes the scratch folder (the files ingested are the store's
// by then).
func (l *Load) Close() error { return l.s.fs.RemoveAll(l.dir) }
