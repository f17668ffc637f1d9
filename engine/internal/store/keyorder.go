package store

import (
	"errors"
	"fmt"
	"os"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/engine/internal/format"
)

// KeyOrder is the Pebble comparer of indexes created since it was added. It
// orders keys as bytes.Compare does, like Pebble's default, but splits a
// posting key after its fingerprint. Pebble's bloom filters then hold the
// fingerprints, and a SeekPrefixGE on one skips every sstable that does not
// hold it. A flush checks each fingerprint it adds, most of them new, and a
// query each one it matches. Without the filters each of these checks is a
// seek through every level of the LSM tree that has not been compacted yet.
//
// Indexes created with Pebble's default comparer keep it (Pebble refuses to
// open a store with another): Open reads which one a store has, and seeks
// postings with SeekGE there.
var KeyOrder = func() *Order {
	c := *pebble.DefaultComparer
	c.Name = "simhashdb.keys.v1"
	c.Split = splitKey
	c.ImmediateSuccessor = immediateSuccessor
	return &c
}()

// splitKey is KeyOrder's Split. Every key of at least format.PostingPrefixLen
// bytes in the postings space is split there (not only 17-byte ones), so
// that comparing prefixes first orders keys as bytes.Compare does:
// TestKeyOrder checks Pebble's rules for Split.
func splitKey(k []byte) int {
	if len(k) >= format.PostingPrefixLen && k[0] == format.SpacePostings {
		return format.PostingPrefixLen
	}
	return len(k)
}

// immediateSuccessor appends to dst the smallest key above the whole-prefix
// key a whose prefix is whole too. Appending a 0 byte, Pebble's default,
// would make a posting prefix a longer key with the same prefix; for those
// the successor is the next fingerprint's prefix (its shortest form).
func immediateSuccessor(dst, a []byte) []byte {
	if len(a) == format.PostingPrefixLen && a[0] == format.SpacePostings {
		return append(dst, format.PrefixEnd(a)...)
	}
	return append(append(dst, a...), 0)
}

// storedOrder returns the comparer of the Pebble store in pdir: newOrder
// for a new store, KeyOrder for one created with it, Pebble's default for
// one created before KeyOrder was added.
func storedOrder(fs vfs.FS, pdir string, newOrder *pebble.Comparer) (*pebble.Comparer, error) {
	desc, err := pebble.Peek(pdir, fs)
	if errors.Is(err, os.ErrNotExist) {
		return newOrder, nil
	}
	if err != nil {
		return nil, fmt.Errorf("engine: reading %s: %w", pdir, err)
	}
	if !desc.Exists || desc.OptionsFilename == "" {
		return newOrder, nil // new, or Pebble reports what is missing
	}
	text, err := ReadFile(fs, desc.OptionsFilename)
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	var stored pebble.Options
	err = stored.Parse(string(text), &pebble.ParseHooks{
		NewComparer: func(name string) (*pebble.Comparer, error) {
			if name == KeyOrder.Name {
				return KeyOrder, nil
			}
			return nil, fmt.Errorf("%w: %s: a Pebble store ordered by %q, not a simhashdb index, left as it is", ErrNotIndex, desc.OptionsFilename, name)
		},
		SkipUnknown: func(string, string) bool { return true },
	})
	if err != nil {
		return nil, fmt.Errorf("engine: %s: %w", desc.OptionsFilename, err)
	}
	if stored.Comparer == KeyOrder {
		return KeyOrder, nil
	}
	return pebble.DefaultComparer, nil
}

// Order is a key order a store is created with: KeyOrder, or Pebble's
// default in stores older builds made.
type Order = pebble.Comparer
