package engine

import (
	"sync"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/table"
)

// tableBlock returns block j of table t, packed, and its pending list: from the
// cache, or read from st's snapshot and cached.
func (db *DB) tableBlock(st *state, t, j int) (*cache.Entry, error) {
	ti := &st.tables[t]
	if b := db.cache.Get(ti.Slot(j)); b != nil {
		return b, nil
	}
	// Decoded into a buffer kept for the next miss: the cache keeps the
	// packed copy, and a decoded one per miss would be garbage that lets
	// the heap grow well past the cache between collections.
	buf := decodeBufs.Get().(*[]uint64)
	defer decodeBufs.Put(buf)
	fps, pend, err := table.DecodeBlock(st.snap, ti.Codes(), t, ti.Key(j), ti.Pending(j), (*buf)[:0])
	if err != nil {
		return nil, err
	}
	*buf = fps
	b := cache.NewEntry(cache.Pack(fps), pend)
	db.cache.PutEntry(ti.Slot(j), b)
	return b, nil
}

var decodeBufs = sync.Pool{New: func() any { return new([]uint64) }}

// readBlock returns block j of table t decoded, and its pending list,
// from the cache or from st's snapshot: for a flush, which rewrites it.
func (db *DB) readBlock(st *state, t, j int) (fps, pend []uint64, err error) {
	ti := &st.tables[t]
	if b := db.cache.Get(ti.Slot(j)); b != nil {
		return b.Packed.AppendTo(make([]uint64, 0, b.Packed.Len())), b.Pending(), nil
	}
	if fps, pend, err = table.DecodeBlock(st.snap, ti.Codes(), t, ti.Key(j), ti.Pending(j), nil); err != nil {
		return nil, nil, err
	}
	db.cache.Put(ti.Slot(j), fps, pend)
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
		if j >= ti.Len() || ti.Key(j) != key {
			return format.CorruptBlock(t, key, "not in the block directory")
		}
		j++
		return fn(j-1, key, v)
	})
}
