package store

import (
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/engine/internal/uring"
)

// readFS is the file system Pebble opens its sstables through: it counts
// their reads at offsets (Store.Reads), and sends them through the store's
// io_uring ring when it has one, so that the reads of a query's table
// blocks, issued together, reach the disk together (package uring says
// why pread does not).
type readFS struct {
	vfs.FS
	ring  *uring.Ring // nil: the file's own ReadAt
	reads *atomic.Int64
}

func (fs readFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	rf := readFile{File: f, reads: fs.reads}
	if f.Fd() != vfs.InvalidFd {
		rf.ring = fs.ring
	}
	return rf, nil
}

// readFile is an sstable open for reads.
type readFile struct {
	vfs.File
	ring  *uring.Ring
	reads *atomic.Int64
}

func (f readFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads.Add(1)
	if f.ring != nil {
		return f.ring.ReadAt(f.Fd(), p, off)
	}
	return f.File.ReadAt(p, off)
}
