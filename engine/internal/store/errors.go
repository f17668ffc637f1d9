package store

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/cockroachdb/pebble/v2"
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

// ErrKeyNotFound is a read of a key the store does not hold (Pebble's
// ErrNotFound): the engine's callers ask the store, not Pebble.
var ErrKeyNotFound = pebble.ErrNotFound

// IsCorruption reports whether err is Pebble's report of damaged data.
func IsCorruption(err error) bool { return pebble.IsCorruptionError(err) }

// DiskErr names what failed and makes an out-of-space error match
// ErrDiskFull too.
func DiskErr(what string, err error) error {
	if errors.Is(err, syscall.ENOSPC) && !errors.Is(err, ErrDiskFull) {
		return fmt.Errorf("%w: %s: %w", ErrDiskFull, what, err)
	}
	return fmt.Errorf("engine: %s: %w", what, err)
}
