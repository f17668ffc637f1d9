package store

import (
	"errors"
	"fmt"
	"syscall"
)

// Errors of the store, which the engine exports under the same names
// (engine.ErrDiskFull and the others): match them with errors.Is.
var (
	// ErrReadOnly: a write where none can be made (a read-only open, a
	// read-only file system).
	ErrReadOnly = errors.New("engine: read-only")
	// ErrNotIndex: the folder holds no index.
	ErrNotIndex = errors.New("engine: not an index")
	// ErrLocked: another open has the index.
	ErrLocked = errors.New("engine: the index is in use")
	// ErrDiskFull: a write needed disk space there was not.
	ErrDiskFull = errors.New("engine: disk full")
)

// DiskErr names what failed and makes an out-of-space error match
// ErrDiskFull too.
func DiskErr(what string, err error) error {
	if errors.Is(err, syscall.ENOSPC) && !errors.Is(err, ErrDiskFull) {
		return fmt.Errorf("%w: %s: %w", ErrDiskFull, what, err)
	}
	return fmt.Errorf("engine: %s: %w", what, err)
}
