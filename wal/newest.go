package wal

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The marker of the newest segment: a file that names the last segment a
// Log created, written (a copy renamed over it) once the segment exists
// and before any record goes into it. Segments are removed only from the
// oldest up (RemoveBefore), so every number from the first segment left
// to the marker's must be there: a missing one is a segment lost or
// removed by hand, with acknowledged records in it, which Replay reports
// by name instead of replaying the others as if it had never been.

// newestName is the marker's file name in a log's directory.
const newestName = "NEWEST"

// readNewest returns the segment the marker in dir names, 0 if there is
// no marker (a log written before it, or none yet).
func readNewest(fs vfs.FS, dir string) (uint64, error) {
	path := fs.PathJoin(dir, newestName)
	data, err := readFile(fs, path)
	if errors.Is(err, errNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(strings.TrimSuffix(string(data), "\n"), 10, 64)
	if err != nil || n == 0 {
		return 0, &CorruptError{Path: path, Reason: fmt.Sprintf("the marker of the newest segment holds %q, not a segment number", data)}
	}
	return n, nil
}

// writeNewest makes the marker in dir name segment n, durably.
func writeNewest(fs vfs.FS, dir string, n uint64) error {
	path := fs.PathJoin(dir, newestName)
	tmp := path + ".tmp"
	if err := writeFile(fs, tmp, []byte(strconv.FormatUint(n, 10)+"\n")); err != nil {
		return err
	}
	if err := fs.Rename(tmp, path); err != nil {
		return err
	}
	return syncDir(fs, dir)
}

// firstMissing returns the first segment that should be among segs (the
// segments from the replay's start on, ascending) and is not: a gap
// between two of them, or one after the last up to newest. 0 if none is.
func firstMissing(segs []uint64, newest uint64) uint64 {
	for i := 1; i < len(segs); i++ {
		if segs[i] != segs[i-1]+1 {
			return segs[i-1] + 1
		}
	}
	if len(segs) > 0 && newest > segs[len(segs)-1] {
		return segs[len(segs)-1] + 1
	}
	return 0
}
