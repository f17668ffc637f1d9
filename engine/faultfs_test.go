package engine

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// quotaFS is a small disk: the operating system's file system with a limit
// on the bytes written through it. A write past the limit writes what
// fits and fails with ENOSPC, as a full file system does; GetDiskUsage
// reports the room left.
type quotaFS struct {
	vfs.FS
	mu    sync.Mutex
	used  int64
	limit int64
}

func newQuotaFS(limit int64) *quotaFS { return &quotaFS{FS: vfs.Default, limit: limit} }

// setLimit changes the disk's size: space freed, or filled.
func (q *quotaFS) setLimit(limit int64) {
	q.mu.Lock()
	q.limit = limit
	q.mu.Unlock()
}

// take reserves up to n bytes and returns how many it got.
func (q *quotaFS) take(n int) int {
	q.mu.Lock()
	defer q.mu.Unlock()
	got := int64(n)
	if q.used+got > q.limit {
		got = max(q.limit-q.used, 0)
	}
	q.used += got
	return int(got)
}

// usedBytes is what the disk holds.
func (q *quotaFS) usedBytes() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.used
}

func (q *quotaFS) give(n int64) {
	q.mu.Lock()
	q.used = max(q.used-n, 0)
	q.mu.Unlock()
}

func (q *quotaFS) size(name string) int64 {
	if fi, err := q.FS.Stat(name); err == nil && !fi.IsDir() {
		return fi.Size()
	}
	return 0
}

func (q *quotaFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	old := q.size(name)
	f, err := q.FS.Create(name, c)
	if err != nil {
		return nil, err
	}
	q.give(old)
	return &quotaFile{File: f, q: q, name: name}, nil
}

func (q *quotaFS) OpenReadWrite(name string, c vfs.DiskWriteCategory, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := q.FS.OpenReadWrite(name, c, opts...)
	if err != nil {
		return nil, err
	}
	return &quotaFile{File: f, q: q, name: name}, nil
}

func (q *quotaFS) Remove(name string) error {
	n := q.size(name)
	err := q.FS.Remove(name)
	if err == nil {
		q.give(n)
	}
	return err
}

func (q *quotaFS) Rename(from, to string) error {
	n := q.size(to)
	err := q.FS.Rename(from, to)
	if err == nil {
		q.give(n)
	}
	return err
}

func (q *quotaFS) GetDiskUsage(string) (vfs.DiskUsage, error) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return vfs.DiskUsage{AvailBytes: uint64(max(q.limit-q.used, 0)), TotalBytes: uint64(q.limit), UsedBytes: uint64(q.used)}, nil
}

func (q *quotaFS) Unwrap() vfs.FS { return q.FS }

type quotaFile struct {
	vfs.File
	q    *quotaFS
	name string
}

func (f *quotaFile) Write(p []byte) (int, error) {
	n := f.q.take(len(p))
	w, err := f.File.Write(p[:n])
	if err == nil && n < len(p) {
		err = &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
	}
	return w, err
}

func (f *quotaFile) WriteAt(p []byte, off int64) (int, error) {
	n := f.q.take(len(p))
	w, err := f.File.WriteAt(p[:n], off)
	if err == nil && n < len(p) {
		err = &os.PathError{Op: "write", Path: f.name, Err: syscall.ENOSPC}
	}
	return w, err
}

func (f *quotaFile) Preallocate(off, n int64) error { return nil }

// faultFS fails the operations that fail says fail, with the error it
// returns; files it opens are wrapped too.
type faultFS struct {
	vfs.FS
	fail func(op, path string) error
}

func (f *faultFS) Create(name string, c vfs.DiskWriteCategory) (vfs.File, error) {
	if err := f.fail("create", name); err != nil {
		return nil, err
	}
	file, err := f.FS.Create(name, c)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *faultFS) OpenDir(name string) (vfs.File, error) {
	file, err := f.FS.OpenDir(name)
	if err != nil {
		return nil, err
	}
	return &faultFile{File: file, fs: f, name: name}, nil
}

func (f *faultFS) Lock(name string) (io.Closer, error) {
	if err := f.fail("lock", name); err != nil {
		return nil, err
	}
	return f.FS.Lock(name)
}

func (f *faultFS) Unwrap() vfs.FS { return f.FS }

type faultFile struct {
	vfs.File
	fs   *faultFS
	name string
}

func (f *faultFile) Write(p []byte) (int, error) {
	if err := f.fs.fail("write", f.name); err != nil {
		return 0, err
	}
	return f.File.Write(p)
}

func (f *faultFile) Sync() error {
	if err := f.fs.fail("sync", f.name); err != nil {
		return err
	}
	return f.File.Sync()
}

// readOnlyMedium fails every operation that would change a file, as a
// read-only mount does.
func readOnlyMedium(op, path string) error {
	switch op {
	case "create", "lock", "write", "sync":
		return &os.PathError{Op: op, Path: path, Err: syscall.EROFS}
	}
	return nil
}

var errInjected = errors.New("injected")

func injected(op, path string, errno syscall.Errno) error {
	return &os.PathError{Op: op, Path: path, Err: fmt.Errorf("%w: %w", errInjected, errno)}
}
