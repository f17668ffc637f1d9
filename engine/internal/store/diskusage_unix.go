//go:build unix

package store

import (
	"io/fs"
	"syscall"
)

// onDisk is what a file takes on disk: its allocated blocks, which count
// the space Pebble preallocates for its logs, or its size if larger (a
// sparse file).
func onDisk(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return max(fi.Size(), int64(st.Blocks)*512)
	}
	return fi.Size()
}
