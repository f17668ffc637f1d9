package engine

import (
	"errors"
	"slices"
	"sync"

	"github.com/cockroachdb/pebble/v2"
	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
)

// tableBlock returns block j of table t, packed, and its pending list: from the
// cache, or read from st's snapshot and cached.
func (e *DB) tableBlock(st *state, t, j int) (*cache.Entry, error) {
	ti := &st.tables[t]
	if b := e.cache.Get(ti.slot(j)); b != nil {
		return b, nil
	}
	// Decoded into a buffer kept for the next miss: the cache keeps the
	// packed copy, and a decoded one per miss would be garbage that lets
	// the heap grow well past the cache between collections.
	buf := decodeBufs.Get().(*[]uint64)
	defer decodeBufs.Put(buf)
	fps, pend, err := decodeBlock(st.snap, ti.codes, t, ti.keys[j], ti.pending(j), (*buf)[:0])
	if err != nil {
		return nil, err
	}
	*buf = fps
	b := cache.NewEntry(cache.Pack(fps), pend)
	e.cache.PutEntry(ti.slot(j), b)
	return b, nil
}

var decodeBufs = sync.Pool{New: func() any { return new([]uint64) }}

// readBlock returns block j of table t decoded, and its pending list,
// from the cache or from st's snapshot: for a flush, which rewrites it.
func (e *DB) readBlock(st *state, t, j int) (fps, pend []uint64, err error) {
	ti := &st.tables[t]
	if b := e.cache.Get(ti.slot(j)); b != nil {
		return b.Packed.AppendTo(make([]uint64, 0, b.Packed.Len())), b.Pending(), nil
	}
	if fps, pend, err = decodeBlock(st.snap, ti.codes, t, ti.keys[j], ti.pending(j), nil); err != nil {
		return nil, nil, err
	}
	e.cache.Put(ti.slot(j), fps, pend)
	return fps, pend, nil
}

// decodeBlock reads and decodes block key of table t into dst, and its
// pending list of the given length.
func decodeBlock(r reader, codes codec.CodeMap, t int, key uint64, pending int, dst []uint64) (fps, pend []uint64, err error) {
	v, c, err := r.Get(format.TableKey(format.SpaceTables, t, key))
	if errors.Is(err, pebble.ErrNotFound) {
		return nil, nil, format.CorruptBlock(t, key, "in the block directory but not stored")
	}
	if err != nil {
		return nil, nil, format.BlockErr(t, key, err)
	}
	defer c.Close()
	if fps, err = decodeValue(dst, v, codes, t, key); err != nil {
		return nil, nil, err
	}
	if pend, err = readPending(r, t, key, pending); err != nil {
		return nil, nil, err
	}
	for _, p := range pend {
		if _, found := slices.BinarySearch(fps, p); found {
			return nil, nil, inBlockToo(t, key, p)
		}
	}
	return fps, pend, nil
}

// walkBlocks calls fn for every stored block of table t in st, in key
// order, with its place j in the block directory and its stored value; a
// block that the directory does not hold at that place is corrupt. (Check
// walks the blocks its own way: it reports every problem, not the first.)
func walkBlocks(st *state, t int, fn func(j int, key uint64, v []byte) error) error {
	ti, j := &st.tables[t], 0
	return scanReader(st.snap, format.TablePrefix(format.SpaceTables, t), func(k, v []byte) error {
		_, key, err := format.ParseTableKey(format.SpaceTables, k, len(st.tables))
		if err != nil {
			return err
		}
		if j >= len(ti.keys) || ti.keys[j] != key {
			return format.CorruptBlock(t, key, "not in the block directory")
		}
		j++
		return fn(j-1, key, v)
	})
}

// decodeValue decodes v, the stored value of block key of table t, into
// dst, and checks that it ends with its key.
func decodeValue(dst []uint64, v []byte, codes codec.CodeMap, t int, key uint64) ([]uint64, error) {
	fps, err := codec.Decode(dst, v, codes)
	if err != nil {
		return nil, format.CorruptBlock(t, key, "%w", err)
	}
	if len(fps) == 0 || fps[len(fps)-1] != key {
		return nil, format.CorruptBlock(t, key, "ends with another fingerprint than its key")
	}
	return fps, nil
}

// readPending returns the pending list of n fingerprints of block key of
// table t.
func readPending(r reader, t int, key uint64, n int) ([]uint64, error) {
	if n == 0 {
		return nil, nil
	}
	v, c, err := r.Get(format.TableKey(format.SpacePending, t, key))
	if errors.Is(err, pebble.ErrNotFound) {
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

// withPending returns block key's fingerprints fps merged with its pending
// list of n fingerprints.
func withPending(r reader, t int, key uint64, n int, fps []uint64) ([]uint64, error) {
	pend, err := readPending(r, t, key, n)
	if err != nil {
		return nil, err
	}
	return mergePending(t, key, fps, pend)
}

// mergePending merges block key's fingerprints fps with its pending list.
func mergePending(t int, key uint64, fps, pend []uint64) ([]uint64, error) {
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
