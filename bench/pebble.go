package bench

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/simhashdb/simhashdb/internal/compression"
	"github.com/simhashdb/simhashdb/permutation"
)

// plainPebbleIndexBytes returns the size of the whole index kept as plain
// Pebble keys, compressed with Zstd (the smallest of Pebble's compressions):
// each table of design d as the permuted distinct fingerprints, 9-byte keys
// (table, permuted fingerprint); documents as id -> fingerprint; postings
// as keys (fingerprint, id). The ids are the positions in fps.
func plainPebbleIndexBytes(d *permutation.Design, fps []uint64) (int64, error) {
	distinct := slices.Compact(slices.Sorted(slices.Values(fps)))
	perm := make([]uint64, len(distinct))
	return compression.PlainSST(sstable.ZstdCompression, func(set func(key, value []byte) error) error {
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
