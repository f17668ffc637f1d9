package uring

import (
	"os"

	"golang.org/x/sys/unix"
)

// OpenDirect opens the file at path again, for reads that bypass the
// page cache (O_DIRECT), and returns its descriptor.
func OpenDirect(path string) (uintptr, error) {
	fd, err := unix.Open(path, unix.O_RDONLY|unix.O_DIRECT|unix.O_CLOEXEC, 0)
	if err != nil {
		return 0, &os.PathError{Op: "open O_DIRECT", Path: path, Err: err}
	}
	return uintptr(fd), nil
}

// CloseDirect closes a descriptor OpenDirect returned.
func CloseDirect(fd uintptr) error { return unix.Close(int(fd)) }

// ReadAtDirect is ReadAtDisk for a file open twice, as fd and as dfd
// (OpenDirect): a read the page cache holds whole is a pread of fd;
// another goes to the disk through the ring and dfd, widened to whole
// pages, and leaves the page cache as it was. Buffered, a read that
// misses makes the kernel allocate, charge and insert its pages and start
// the disk's read on the reader's thread; here the ring's submission
// starts all of a probe's reads at once, for less of the processor.
func (r *Ring) ReadAtDirect(fd, dfd uintptr, p []byte, off int64) (n int, disk bool, err error) {
	rs := [1]Read{{Fd: fd, DirectFd: dfd, Direct: true, P: p, Off: off}}
	disk = r.readMany(rs[:], true)
	return rs[0].N, disk, rs[0].Err
}
