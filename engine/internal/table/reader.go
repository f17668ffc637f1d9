package table

import (
	"sync"
	"sync/atomic"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/engine/internal/tasks"
	"github.com/simhashdb/simhashdb/permutation"
)

// Reader reads the tables of one state of an index: their directories,
// the snapshot they describe, and the block cache that every state of the
// index shares. Queries probe through it (probe.go); a flush, a batch,
// Warm and FindAll read blocks through it.
type Reader struct {
	Design []permutation.Table
	Tables []Index
	Snap   store.Reader
	Cache  *cache.Cache
	// Reads counts the block reads that probes of every state have in
	// flight together (readMisses); the index keeps one for all.
	Reads *atomic.Int64
	// Workers, if set, run those reads (the index keeps them for all
	// states); without, each runs on a goroutine of its own.
	Workers *tasks.Workers
}

// Block returns block j of table t, packed, and its pending list: from the
// cache, or read from the snapshot and cached.
func (r *Reader) Block(t, j int) (*cache.Entry, error) { return r.fetch(t, j, nil) }

// fetch is Block for a query's probes, which give vs: a block that the
// cache does not admit (cache.Cache.Admit) is decoded into one of vs, for
// them alone.
func (r *Reader) fetch(t, j int, vs *views) (*cache.Entry, error) {
	ti := &r.Tables[t]
	if b := r.Cache.Get(ti.Slot(j)); b != nil {
		return b, nil
	}
	v, c, err := getStored(r.Snap, t, ti.Key(j))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	return r.stored(t, j, v, vs)
}

// stored returns block j of table t from v, its stored value, that the
// cache missed: cached, or, where the cache does not admit it, decoded
// into one of vs (given) for one query's probes.
func (r *Reader) stored(t, j int, v []byte, vs *views) (*cache.Entry, error) {
	ti := &r.Tables[t]
	if vs == nil || r.Cache.Admit(ti.Slot(j), int64(len(v))+cache.EntryOverhead) {
		return r.cacheStored(t, j, v)
	}
	w := vs.take()
	fps, pend, err := DecodeStored(r.Snap, v, ti.Codes(), t, ti.Key(j), ti.Pending(j), w.buf[:0])
	if err != nil {
		return nil, err
	}
	w.buf = fps
	w.e.SetView(fps, pend)
	return &w.e, nil
}

// cacheStored decodes v, the stored value of block j of table t, with its
// pending list, and caches it packed.
func (r *Reader) cacheStored(t, j int, v []byte) (*cache.Entry, error) {
	ti := &r.Tables[t]
	// Decoded into a buffer kept for the next miss: the cache keeps the
	// packed copy, and a decoded one per miss would be garbage that lets
	// the heap grow well past the cache between collections.
	buf := decodeBufs.Get().(*[]uint64)
	defer decodeBufs.Put(buf)
	fps, pend, err := DecodeStored(r.Snap, v, ti.Codes(), t, ti.Key(j), ti.Pending(j), (*buf)[:0])
	if err != nil {
		return nil, err
	}
	*buf = fps
	b := cache.NewEntry(cache.Pack(fps), pend)
	r.Cache.PutEntry(ti.Slot(j), b)
	return b, nil
}

var decodeBufs = sync.Pool{New: func() any { return new([]uint64) }}

// Decoded returns block j of table t decoded, and its pending list, from
// the cache or from the snapshot: for a flush, which rewrites it.
func (r *Reader) Decoded(t, j int) (fps, pend []uint64, err error) {
	ti := &r.Tables[t]
	if b := r.Cache.Get(ti.Slot(j)); b != nil {
		return b.Packed.AppendTo(make([]uint64, 0, b.Packed.Len())), b.Pending(), nil
	}
	if fps, pend, err = DecodeBlock(r.Snap, ti.Codes(), t, ti.Key(j), ti.Pending(j), nil); err != nil {
		return nil, nil, err
	}
	r.Cache.Put(ti.Slot(j), fps, pend)
	return fps, pend, nil
}

// Walk calls fn for every stored block of table t, in key order, with its
// place j in the block directory and its stored value; a block that the
// directory does not hold at that place is corrupt. (Check walks the
// blocks its own way: it reports every problem, not the first.)
func (r *Reader) Walk(t int, fn func(j int, key uint64, v []byte) error) error {
	ti, j := &r.Tables[t], 0
	return store.Scan(r.Snap, format.TablePrefix(format.SpaceTables, t), func(k, v []byte) error {
		_, key, err := format.ParseTableKey(format.SpaceTables, k, len(r.Tables))
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
