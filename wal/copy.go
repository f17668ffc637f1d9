package wal

import (
	"fmt"
	"io"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// Copy copies the log in dir, from segment first on, and its marker of
// the newest segment, into to (created), durably: a log that replays as
// the one in dir would from first. The caller keeps the log from growing
// or losing segments meanwhile (the engine's Checkpoint holds its commits
// and flushes), and has written out its buffered records (WriteOut).
func Copy(fs vfs.FS, dir, to string, first uint64) error {
	segs, err := segments(fs, dir)
	if err != nil {
		return err
	}
	if err := fs.MkdirAll(to, 0o755); err != nil {
		return err
	}
	for _, n := range segs {
		if n < first {
			continue
		}
		if err := copyFile(fs, fs.PathJoin(dir, SegmentName(n)), fs.PathJoin(to, SegmentName(n))); err != nil {
			return err
		}
	}
	newest, err := readNewest(fs, dir)
	if err != nil {
		return err
	}
	if newest != 0 {
		if err := writeNewest(fs, to, newest); err != nil {
			return err
		}
	}
	if err := syncDir(fs, to); err != nil {
		return err
	}
	return syncDir(fs, fs.PathDir(to))
}

// copyFile copies from to a new file to, synced.
func copyFile(fs vfs.FS, from, to string) (err error) {
	src, err := fs.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := fs.Create(to, vfs.WriteCategoryUnspecified)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := dst.Close(); err == nil {
			err = cerr
		}
	}()
	if _, err := io.Copy(dst, src); err != nil {
		return fmt.Errorf("wal: copying %s: %w", from, err)
	}
	return dst.Sync()
}
