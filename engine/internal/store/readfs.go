package store

import (
	"errors"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/engine/internal/uring"
)

// readFS is the file system Pebble opens its sstables through: it counts
// their reads at offsets and the rounds they come in (Store.Reads,
// Store.ReadRounds), and sends them through the store's
// io_uring ring when it has one, so that the reads of a query's table
// blocks, issued together, reach the disk together (package uring says
// why pread does not).
type readFS struct {
	vfs.FS
	ring  *uring.Ring // nil: the file's own ReadAt
	reads *readCount
	// direct reads what the page cache does not hold with O_DIRECT
	// (the engine's ReadsDirect), through the ring, but for files opened
	// for sequential reads.
	direct bool
}

// readCount counts reads of sstables, and the rounds they come in: the
// longest chain of reads each of which started after the one before it
// had finished. Reads issued together are one round; a read issued once
// another has come back (an index block, then its data block) starts the
// next. Through the ring, only reads that waited for the disk make
// rounds; with pread every read does, as the page cache cannot be told
// apart. It counts on across queries: over queries made one at a time, it
// grows by the rounds each waited for.
type readCount struct {
	reads, rounds atomic.Int64
}

func (fs readFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := fs.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	rf := readFile{File: f, reads: fs.reads, dfd: vfs.InvalidFd}
	if f.Fd() != vfs.InvalidFd {
		rf.ring = fs.ring
	}
	if rf.ring != nil && fs.direct && !slices.Contains(opts, vfs.SequentialReadsOption) {
		// A file system without O_DIRECT (tmpfs) is read as without it.
		// A file opened for sequential reads (a compaction's inputs, or a
		// long scan's once Pebble's read-ahead is at its largest) is read
		// through the page cache, whose read-ahead it asked for.
		if dfd, err := uring.OpenDirect(name); err == nil {
			rf.dfd = dfd
		}
	}
	return rf, nil
}

// readFile is an sstable open for reads.
type readFile struct {
	vfs.File
	ring  *uring.Ring
	reads *readCount
	dfd   uintptr // the file open with O_DIRECT, or vfs.InvalidFd
}

func (f readFile) Close() error {
	err := f.File.Close()
	if f.dfd != vfs.InvalidFd {
		err = errors.Join(err, uring.CloseDirect(f.dfd))
	}
	return err
}

func (f readFile) ReadAt(p []byte, off int64) (int, error) {
	f.reads.reads.Add(1)
	round := f.reads.rounds.Load() + 1
	if f.ring != nil {
		// Through the ring, a read the page cache held is not a round: it
		// did not wait for the disk.
		var n int
		var disk bool
		var err error
		if f.dfd != vfs.InvalidFd {
			n, disk, err = f.ring.ReadAtDirect(f.Fd(), f.dfd, p, off)
		} else {
			n, disk, err = f.ring.ReadAtDisk(f.Fd(), p, off)
		}
		if disk {
			f.reads.roundDone(round)
		}
		return n, err
	}
	defer f.reads.roundDone(round)
	return f.File.ReadAt(p, off)
}

// roundDone notes that a read of round r (the rounds done when it started,
// plus one) has come back.
func (c *readCount) roundDone(r int64) {
	for {
		done := c.rounds.Load()
		if r <= done || c.rounds.CompareAndSwap(done, r) {
			return
		}
	}
}
