package bench

import (
	"encoding/binary"
	"os"
	"path/filepath"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
)

// pebbleFormat is the format the comparison writes: the one the engine pins
// (Pebble's default format is an old one; comparing against it would flatter
// nobody).
const pebbleFormat = pebble.FormatValueSeparation

// plainPebbleBits returns the bits per fingerprint of sorted fps kept the
// plain way: each as an 8-byte big-endian Pebble key with an empty value, in
// one sstable as Pebble writes it at its bottom level (what a compacted
// database holds), with the given block compression.
func plainPebbleBits(fps []uint64, compression *sstable.CompressionProfile) (float64, error) {
	dir, err := os.MkdirTemp("", "simhashdb-pebble-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	opts := &pebble.Options{FormatMajorVersion: pebbleFormat}
	opts.EnsureDefaults()
	wo := opts.MakeWriterOptions(6, pebbleFormat.MaxTableFormat())
	wo.Compression = compression
	path := filepath.Join(dir, "t.sst")
	f, err := vfs.Default.Create(path, vfs.WriteCategoryUnspecified)
	if err != nil {
		return 0, err
	}
	w := sstable.NewWriter(objstorageprovider.NewFileWritable(f), wo)
	var key [8]byte
	for _, fp := range fps {
		binary.BigEndian.PutUint64(key[:], fp)
		if err := w.Set(key[:], nil); err != nil {
			w.Close()
			return 0, err
		}
	}
	if err := w.Close(); err != nil {
		return 0, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return float64(st.Size()*8) / float64(len(fps)), nil
}
