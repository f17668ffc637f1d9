//go:build !linux

package engine

import "testing"

// dropPageCache does nothing where the system cannot be asked.
func dropPageCache(*testing.T, string) {}
