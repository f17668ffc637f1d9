package compression

import (
	"encoding/binary"
	"os"
	"path/filepath"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/klauspost/compress/zstd"
)

// Roaring64Bytes is the serialized size of fps in a 64-bit roaring bitmap,
// its containers run-optimised.
func Roaring64Bytes(fps []uint64) int64 {
	b := roaring64.New()
	b.AddMany(fps)
	b.RunOptimize()
	return int64(b.GetSerializedSizeInBytes())
}

// fixedGaps is sorted fps as the first value and then the gaps, each 8
// bytes big-endian.
func fixedGaps(fps []uint64) []byte {
	out := make([]byte, 0, 8*len(fps))
	prev := uint64(0)
	for _, v := range fps {
		out = binary.BigEndian.AppendUint64(out, v-prev)
		prev = v
	}
	return out
}

// varintGaps is sorted fps as the first value and then the gaps, each a
// uvarint.
func varintGaps(fps []uint64) []byte {
	out := make([]byte, 0, 8*len(fps))
	prev := uint64(0)
	for _, v := range fps {
		out = binary.AppendUvarint(out, v-prev)
		prev = v
	}
	return out
}

// ZstdBytes is the size of b compressed whole by zstd at its best level.
func ZstdBytes(b []byte) (int64, error) {
	enc, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBestCompression), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return 0, err
	}
	defer enc.Close()
	return int64(len(enc.EncodeAll(b, nil))), nil
}

// PebbleKeysBytes is the size of sorted fps kept the plain way: each as an
// 8-byte big-endian Pebble key with an empty value, in one sstable as
// Pebble writes its bottom level (what a compacted database holds), with
// the given block compression.
func PebbleKeysBytes(fps []uint64, compression *sstable.CompressionProfile) (int64, error) {
	return PlainSST(compression, func(set func(key, value []byte) error) error {
		var key [8]byte
		for _, fp := range fps {
			binary.BigEndian.PutUint64(key[:], fp)
			if err := set(key[:], nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// pebbleFormat is the format PlainSST writes: the one the engine pins
// (Pebble's default format is an old one; comparing against it would
// flatter nobody).
const pebbleFormat = pebble.FormatValueSeparation

// PlainSST writes the keys that fill sets, in increasing order, into one
// sstable as Pebble writes its bottom level, with the given compression,
// and returns the file's size.
func PlainSST(compression *sstable.CompressionProfile, fill func(set func(key, value []byte) error) error) (int64, error) {
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
	if err := fill(w.Set); err != nil {
		w.Close()
		return 0, err
	}
	if err := w.Close(); err != nil {
		return 0, err
	}
	st, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}
