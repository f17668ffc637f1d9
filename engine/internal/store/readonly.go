package store

import (
	"errors"
	"io"
	"syscall"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// ReadOnlyFS is the file system of an index opened read-only: the same,
// except that a lock file that cannot be created because the medium is
// read-only (a read-only mount, a snapshot, an archive) is not needed. No
// process can write there, so none can change the index under a reader.
type ReadOnlyFS struct{ vfs.FS }

func (fs ReadOnlyFS) Lock(name string) (io.Closer, error) {
	c, err := fs.FS.Lock(name)
	if errors.Is(err, syscall.EROFS) {
		return io.NopCloser(nil), nil
	}
	return c, err
}

func (fs ReadOnlyFS) Unwrap() vfs.FS { return fs.FS }
