//go:build !linux

package directio

import "errors"

// Drop fails with errors.ErrUnsupported where the system cannot be asked
// to drop pages.
func Drop(string) error { return errors.ErrUnsupported }

// DropTree fails with errors.ErrUnsupported where the system cannot be
// asked to drop pages.
func DropTree(string) error { return errors.ErrUnsupported }
