//go:build unix

package store

import (
	"errors"
	"strings"
	"syscall"
)

// lockHeld reports whether Pebble failed to open because another process
// (or this one) holds the store's lock.
func lockHeld(err error) bool {
	return errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EWOULDBLOCK) ||
		strings.Contains(err.Error(), "lock held by current process")
}
