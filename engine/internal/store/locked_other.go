//go:build !unix

package store

import "strings"

// lockHeld reports whether Pebble failed to open because the store's lock
// is held.
func lockHeld(err error) bool {
	return strings.Contains(err.Error(), "lock held by current process")
}
