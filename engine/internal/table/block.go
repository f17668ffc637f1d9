package table

import (
	"errors"
	"io"
	"slices"

	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
)

// Getter reads one key: a Pebble snapshot or DB.
type Getter interface {
	Get(key []byte) ([]byte, io.Closer, error)
}

// DecodeBlock reads and decodes block key of table t into dst, and its
// pending list of the given length.
func DecodeBlock(r Getter, codes codec.CodeMap, t int, key uint64, pending int, dst []uint64) (fps, pend []uint64, err error) {
	v, c, err := getStored(r, t, key)
	if err != nil {
		return nil, nil, err
	}
	defer c.Close()
	return DecodeStored(r, v, codes, t, key, pending, dst)
}

// getStored reads the stored value of block key of table t, valid until
// the closer is closed; a block the directory lists and the store does not
// hold is corrupt.
func getStored(r Getter, t int, key uint64) ([]byte, io.Closer, error) {
	v, c, err := r.Get(format.TableKey(format.SpaceTables, t, key))
	if errors.Is(err, store.ErrKeyNotFound) {
		return nil, nil, format.CorruptBlock(t, key, "in the block directory but not stored")
	}
	if err != nil {
		return nil, nil, format.BlockErr(t, key, err)
	}
	return v, c, nil
}

// DecodeStored is DecodeBlock of v, the stored value of block key of table
// t, read already; r reads its pending list.
func DecodeStored(r Getter, v []byte, codes codec.CodeMap, t int, key uint64, pending int, dst []uint64) (fps, pend []uint64, err error) {
	if fps, err = DecodeValue(dst, v, codes, t, key); err != nil {
		return nil, nil, err
	}
	if pend, err = ReadPending(r, t, key, pending); err != nil {
		return nil, nil, err
	}
	for _, p := range pend {
		if _, found := slices.BinarySearch(fps, p); found {
			return nil, nil, inBlockToo(t, key, p)
		}
	}
	return fps, pend, nil
}

// DecodeValue decodes v, the stored value of block key of table t, into
// dst; the codec checks the block against its key.
func DecodeValue(dst []uint64, v []byte, codes codec.CodeMap, t int, key uint64) ([]uint64, error) {
	fps, err := codec.Decode(dst, v, key, codes)
	if err != nil {
		return nil, format.CorruptBlock(t, key, "%w", err)
	}
	return fps, nil
}

// ReadPending returns the pending list of n fingerprints of block key of
// table t.
func ReadPending(r Getter, t int, key uint64, n int) ([]uint64, error) {
	if n == 0 {
		return nil, nil
	}
	v, c, err := r.Get(format.TableKey(format.SpacePending, t, key))
	if errors.Is(err, store.ErrKeyNotFound) {
		return nil, format.CorruptBlock(t, key, "the directory counts %d pending fingerprints, none are stored", n)
	}
	if err != nil {
		return nil, format.BlockErr(t, key, err)
	}
	defer c.Close()
	pend, err := format.ParsePending(v, n)
	if err != nil {
		return nil, format.BlockErr(t, key, err)
	}
	return pend, nil
}

func inBlockToo(t int, key, p uint64) error {
	return format.CorruptBlock(t, key, "pending %016x is in the block too", p)
}

// WithPending returns block key's fingerprints fps merged with its pending
// list of n fingerprints.
func WithPending(r Getter, t int, key uint64, n int, fps []uint64) ([]uint64, error) {
	pend, err := ReadPending(r, t, key, n)
	if err != nil {
		return nil, err
	}
	return MergePending(t, key, fps, pend)
}

// MergePending merges block key's fingerprints fps with its pending list.
func MergePending(t int, key uint64, fps, pend []uint64) ([]uint64, error) {
	if len(pend) == 0 {
		return fps, nil
	}
	out := make([]uint64, 0, len(fps)+len(pend))
	i, p := 0, 0
	for i < len(fps) || p < len(pend) {
		switch {
		case p == len(pend) || i < len(fps) && fps[i] < pend[p]:
			out = append(out, fps[i])
			i++
		case i == len(fps) || pend[p] < fps[i]:
			out = append(out, pend[p])
			p++
		default:
			return nil, inBlockToo(t, key, pend[p])
		}
	}
	return out, nil
}
