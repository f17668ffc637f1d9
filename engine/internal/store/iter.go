package store

import (
	"io"

	"github.com/cockroachdb/pebble/v2"
	"github.com/simhashdb/simhashdb/engine/internal/format"
)

// The engine reads the store through the types of this file, so that
// only this package knows Pebble: a snapshot (what a state of the index
// reads), the store itself (what is written and not yet in a state), and
// iterators on either.

// Reader is what reads see of the store: a Snapshot or the Store itself.
type Reader interface {
	// Get returns key's value, valid until the closer is closed, or
	// ErrKeyNotFound.
	Get(key []byte) ([]byte, io.Closer, error)
	// NewIter returns an iterator over the keys o bounds.
	NewIter(o IterOptions) (*Iter, error)
}

// IterOptions bound an iterator: [Lower, Upper).
type IterOptions struct {
	Lower, Upper []byte
	// UseL6Filters asks the bloom filters of the bottom level too, which a
	// prefix seek skips unless told: they pay where most seeks find
	// nothing.
	UseL6Filters bool
}

func (o IterOptions) pebble() *pebble.IterOptions {
	return &pebble.IterOptions{LowerBound: o.Lower, UpperBound: o.Upper, UseL6Filters: o.UseL6Filters}
}

// Iter iterates over keys in order. Its methods are Pebble's, which
// Pebble's documentation describes; an error stops it (Valid is false),
// and Error returns it.
type Iter struct{ it *pebble.Iterator }

func newIter(it *pebble.Iterator, err error) (*Iter, error) {
	if err != nil {
		return nil, err
	}
	return &Iter{it}, nil
}

// First moves to the first key.
func (i *Iter) First() bool { return i.it.First() }

// Last moves to the last key.
func (i *Iter) Last() bool { return i.it.Last() }

// Next moves to the next key.
func (i *Iter) Next() bool { return i.it.Next() }

// Prev moves to the key before.
func (i *Iter) Prev() bool { return i.it.Prev() }

// SeekGE moves to the first key at or after key.
func (i *Iter) SeekGE(key []byte) bool { return i.it.SeekGE(key) }

// SeekPrefixGE is SeekGE for keys that share key's prefix (the
// comparer's Split), which the bloom filters can answer; the iterator
// then stays within that prefix.
func (i *Iter) SeekPrefixGE(key []byte) bool { return i.it.SeekPrefixGE(key) }

// Valid reports whether the iterator is at a key.
func (i *Iter) Valid() bool { return i.it.Valid() }

// Key is the current key, valid until the iterator moves.
func (i *Iter) Key() []byte { return i.it.Key() }

// Value is the current value, valid until the iterator moves, or the
// error reading it.
func (i *Iter) Value() ([]byte, error) { return i.it.ValueAndErr() }

// Error is the error that stopped the iterator, if any.
func (i *Iter) Error() error { return i.it.Error() }

// Close closes the iterator and returns its error, if any.
func (i *Iter) Close() error { return i.it.Close() }

// Snapshot is the store as it was when NewSnapshot took it.
type Snapshot struct {
	s      *pebble.Snapshot
	blocks *blockMap // nil: every read is Pebble's
}

// NewSnapshot takes a snapshot of the store now.
func (s *Store) NewSnapshot() *Snapshot { return &Snapshot{s.db.NewSnapshot(), s.blocks} }

// Get returns key's value in the snapshot, valid until the closer is
// closed, or ErrKeyNotFound.
func (s *Snapshot) Get(key []byte) ([]byte, io.Closer, error) { return s.s.Get(key) }

// Mapped reports whether GetMany and ScanMany read any keys themselves:
// a read-only store's snapshot, with a ring.
func (s *Snapshot) Mapped() bool { return s.blocks != nil }

// GetMany reads the values of keys, all at once where it can: the data
// blocks that hold them go to the disk in one submission, read on the
// calling goroutine, without Pebble's read path (a read-only store with a
// ring; blockmap.go says which keys). fn gets each value it reads, valid
// during the call; missed lists the keys it left, for Get. An error is a
// read that failed or a block found damaged.
func (s *Snapshot) GetMany(keys [][]byte, fn func(i int, v []byte) error) (missed []int, err error) {
	if s.blocks == nil {
		return all(len(keys)), nil
	}
	return s.blocks.getMany(keys, fn)
}

// ScanMany reads the keys in each of spans, [lo, hi) each, all at once
// where it can, as GetMany reads keys: fn gets each key of span i and its
// value in key order, valid during the call; missed lists, in order, the
// spans it left, for an iterator.
func (s *Snapshot) ScanMany(spans [][2][]byte, fn func(i int, k, v []byte) error) (missed []int, err error) {
	if s.blocks == nil {
		return all(len(spans)), nil
	}
	return s.blocks.scanMany(spans, fn)
}

// Reads is a ReadMany's work: keys, whose values Get gets during the call,
// and spans, read in the same submission for a Scan after it.
type Reads struct {
	Keys  [][]byte
	Get   func(i int, v []byte) error
	Spans [][2][]byte
}

// ReadMany reads r.Keys as GetMany does and, in the same submission, the
// blocks of r.Spans: a caller that needs the spans only perhaps (a query's
// own postings, read before its tables say whether it has a match) then
// waits for no second round when it does, and scans them only then
// (Spans.Scan). Release sp once done; it is nil where the snapshot reads
// none itself (Mapped false), or with an error.
func (s *Snapshot) ReadMany(r Reads) (missedKeys []int, sp *Spans, err error) {
	if s.blocks == nil {
		return all(len(r.Keys)), nil, nil
	}
	return s.blocks.readMany(r)
}

// all is 0, 1, ..., n-1: every key or span missed.
func all(n int) []int {
	missed := make([]int, n)
	for i := range missed {
		missed[i] = i
	}
	return missed
}

// NewIter returns an iterator over the snapshot.
func (s *Snapshot) NewIter(o IterOptions) (*Iter, error) { return newIter(s.s.NewIter(o.pebble())) }

// Close lets go of the snapshot.
func (s *Snapshot) Close() error { return s.s.Close() }

// Get returns key's value in the store now, valid until the closer is
// closed, or ErrKeyNotFound.
func (s *Store) Get(key []byte) ([]byte, io.Closer, error) { return s.db.Get(key) }

// NewIter returns an iterator over the store now.
func (s *Store) NewIter(o IterOptions) (*Iter, error) { return newIter(s.db.NewIter(o.pebble())) }

// Scan calls fn with every key of r that starts with prefix, and its
// value, in order, until fn fails.
func Scan(r Reader, prefix []byte, fn func(k, v []byte) error) error {
	it, err := r.NewIter(IterOptions{Lower: prefix, Upper: format.PrefixEnd(prefix)})
	if err != nil {
		return err
	}
	for it.First(); it.Valid(); it.Next() {
		v, err := it.Value()
		if err != nil {
			it.Close()
			return err
		}
		if err := fn(it.Key(), v); err != nil {
			it.Close()
			return err
		}
	}
	return it.Close()
}
