//go:build !unix

package store

import "io/fs"

// onDisk is what a file takes on disk; here, its size.
func onDisk(fi fs.FileInfo) int64 { return fi.Size() }
