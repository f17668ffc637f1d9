//go:build !linux

package directio

import "errors"

// Cached fails with errors.ErrUnsupported where the system cannot say
// what the page cache holds.
func Cached(uintptr, int64, int) (bool, error) { return false, errors.ErrUnsupported }
