package store

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2/vfs"
)

// The few file operations that vfs.FS leaves to its callers. Every byte
// the engine reads or writes goes through its vfs.FS (Options.fs), so that
// tests can run it on a file system that loses what was not synced.

// MkdirTemp makes a new folder in dir whose name starts with prefix.
func MkdirTemp(fs vfs.FS, dir, prefix string) (string, error) {
	for range 100 {
		var b [6]byte
		rand.Read(b[:])
		path := filepath.Join(dir, prefix+hex.EncodeToString(b[:]))
		if _, err := fs.Stat(path); !errors.Is(err, os.ErrNotExist) {
			continue // taken, or unknown: try another name
		}
		return path, fs.MkdirAll(path, 0o755)
	}
	return "", errors.New("engine: no free name for a scratch folder in " + dir)
}

// MakeDir makes folder dir and its entry in its parent durable: an index
// whose folder a power cut takes away has lost every acknowledged write.
func MakeDir(fs vfs.FS, dir string) error {
	if err := fs.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	return SyncDir(fs, fs.PathDir(dir))
}

// SyncDir makes the entries of folder dir durable.
func SyncDir(fs vfs.FS, dir string) error {
	d, err := fs.OpenDir(dir)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("engine: syncing folder %s: %w", dir, err)
	}
	return nil
}

// ReadFile reads a whole file.
func ReadFile(fs vfs.FS, path string) ([]byte, error) {
	f, err := fs.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}

// IsDir reports whether path is a folder; false if it does not exist.
func IsDir(fs vfs.FS, path string) (bool, error) {
	fi, err := fs.Stat(path)
	if errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return fi.IsDir(), nil
}

// DirSize returns the bytes the files under dir take on disk (Pebble's own
// metrics miss freshly ingested tables and preallocated logs).
func DirSize(fs vfs.FS, dir string) int64 {
	names, err := fs.List(dir)
	if err != nil {
		return 0
	}
	var n int64
	for _, name := range names {
		path := filepath.Join(dir, name)
		fi, err := fs.Stat(path)
		switch {
		case err != nil:
		case fi.IsDir():
			n += DirSize(fs, path)
		default:
			n += onDisk(fi)
		}
	}
	return n
}
