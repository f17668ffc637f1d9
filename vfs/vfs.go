// Package vfs names the file system an index lives on, for
// engine.Options.FS: Pebble's vfs.FS, which the engine's store and its
// write-ahead log both use, so that an embedder sets one without
// importing Pebble.
package vfs

import pvfs "github.com/cockroachdb/pebble/v2/vfs"

// FS is a file system: Pebble's vfs.FS.
type FS = pvfs.FS

// Default is the operating system's file system.
var Default FS = pvfs.Default

// NewMem returns a new file system in memory: an index there lasts as
// long as the value does, and a test or a short-lived job need not touch
// the disk.
func NewMem() FS { return pvfs.NewMem() }
