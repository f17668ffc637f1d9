//go:build !linux

package uring

import "errors"

// Ring is not available on this system.
type Ring struct{ t times }

// ErrUnsupported is what New returns where io_uring cannot be used.
var ErrUnsupported = errors.ErrUnsupported

// New fails: io_uring is Linux's.
func New(int) (*Ring, error) { return nil, ErrUnsupported }

// ReadAt is never called: New fails.
func (*Ring) ReadAt(uintptr, []byte, int64) (int, error) { return 0, ErrUnsupported }

// ReadAtDisk is never called: New fails.
func (*Ring) ReadAtDisk(uintptr, []byte, int64) (int, bool, error) { return 0, false, ErrUnsupported }

// Close does nothing.
func (*Ring) Close() error { return nil }

// OpenDirect fails: direct reads go through the ring.
func OpenDirect(string) (uintptr, error) { return 0, ErrUnsupported }

// CloseDirect does nothing.
func CloseDirect(uintptr) error { return nil }

// ReadAtDirect is never called: New fails.
func (*Ring) ReadAtDirect(uintptr, uintptr, []byte, int64) (int, bool, error) {
	return 0, false, ErrUnsupported
}

// ReadMany is never called: New fails.
func (*Ring) ReadMany(rs []Read) bool {
	for i := range rs {
		rs[i].Err = ErrUnsupported
	}
	return false
}
