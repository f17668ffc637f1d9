package bench

import (
	"cmp"
	"encoding/binary"
	"os"
	"path/filepath"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/objstorage/objstorageprovider"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/permutation"
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
	size, err := plainSST(compression, func(set func(key, value []byte) error) error {
		var key [8]byte
		for _, fp := range fps {
			binary.BigEndian.PutUint64(key[:], fp)
			if err := set(key[:], nil); err != nil {
				return err
			}
		}
		return nil
	})
	return float64(size*8) / float64(len(fps)), err
}

// plainPebbleIndexBytes returns the size of the whole index kept as plain
// Pebble keys, compressed with Zstd (the smallest of Pebble's compressions):
// each table of design d as the permuted distinct fingerprints, 9-byte keys
// (table, permuted fingerprint); documents as id -> fingerprint; postings
// as keys (fingerprint, id). The ids are the positions in fps.
func plainPebbleIndexBytes(d *permutation.Design, fps []uint64) (int64, error) {
	distinct := slices.Compact(slices.Sorted(slices.Values(fps)))
	perm := make([]uint64, len(distinct))
	return plainSST(sstable.ZstdCompression, func(set func(key, value []byte) error) error {
		var key [17]byte
		for t := range d.Tables {
			for i, fp := range distinct {
				perm[i] = d.Tables[t].Permute(fp)
			}
			slices.Sort(perm)
			key[0] = byte(t)
			for _, x := range perm {
				binary.BigEndian.PutUint64(key[1:], x)
				if err := set(key[:9], nil); err != nil {
					return err
				}
			}
		}
		var val [8]byte
		key[0] = 'd'
		for id, fp := range fps {
			binary.BigEndian.PutUint64(key[1:], uint64(id))
			binary.BigEndian.PutUint64(val[:], fp)
			if err := set(key[:9], val[:]); err != nil {
				return err
			}
		}
		ids := make([]int, len(fps))
		for i := range ids {
			ids[i] = i
		}
		slices.SortFunc(ids, func(a, b int) int { return cmp.Or(cmp.Compare(fps[a], fps[b]), cmp.Compare(a, b)) })
		key[0] = 'p'
		for _, id := range ids {
			binary.BigEndian.PutUint64(key[1:], fps[id])
			binary.BigEndian.PutUint64(key[9:], uint64(id))
			if err := set(key[:], nil); err != nil {
				return err
			}
		}
		return nil
	})
}

// plainSST writes the keys that fill sets, in increasing order, into one
// sstable as Pebble writes its bottom level, with the given compression,
// and returns the file's size.
func plainSST(compression *sstable.CompressionProfile, fill func(set func(key, value []byte) error) error) (int64, error) {
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
