package engine

import (
	"encoding/binary"
	"fmt"
	"slices"

	"github.com/cockroachdb/pebble/v2"
)

// Keyspaces, one byte each. Numbers keep byte order = numeric order.
const (
	spaceMeta     = 0x01 // 0x01 name
	spaceDocs     = 0x02 // 0x02 id(8) -> fp(8) name
	spacePostings = 0x03 // 0x03 fp(8) id(8) -> name
	spaceTables   = 0x04 // 0x04 table(1) key(8) -> codec block
	spaceBlockDir = 0x05 // 0x05 table(1) key(8) -> uvarint block size [, uvarint pending count]
	spacePending  = 0x06 // 0x06 table(1) key(8) -> the block's pending fingerprints (runs: appendPendingRun)
)

// Metadata keys.
var (
	metaFormat  = []byte{spaceMeta, 'f'} // uint32 format version
	metaDesign  = []byte{spaceMeta, 'd'} // permutation.Design binary
	metaBlock   = []byte{spaceMeta, 'b'} // uvarint block size
	metaWALFrom = []byte{spaceMeta, 'w'} // uvarint: replay the WAL from this segment
	metaCounts  = []byte{spaceMeta, 'n'} // uvarint documents, uvarint fingerprints
)

// metaCodeKey names code id of a table: 0x01 'c' table(1) id(4).
func metaCodeKey(table int, id uint32) []byte {
	return binary.BigEndian.AppendUint32([]byte{spaceMeta, 'c', byte(table)}, id)
}

// formatVersion is the version of the whole on-disk layout above. Version 2
// added pending lists (spacePending, counted in the directory entries).
// Version 3 lets a pending list be several runs, which a flush appends with
// Pebble's concatenating merge instead of reading and rewriting the list,
// and counts the lists' fingerprints on open instead of in the directory,
// which a flush then need not rewrite for each block it appends to. A
// version 1 index has no pending lists; a version 2 list is one run, and a
// version 2 count in the directory is not read. An older index becomes
// version 3 at its next flush, so that an older build refuses it rather
// than misread it.
const formatVersion = 3

// MaxName is the longest document name, in bytes.
const MaxName = 4096

func docKey(id uint64) []byte { return appendDocKey(make([]byte, 0, 9), id) }

// appendDocKey appends the key of document id to dst: the bulk loader's
// allocation-free form of docKey.
func appendDocKey(dst []byte, id uint64) []byte {
	return binary.BigEndian.AppendUint64(append(dst, spaceDocs), id)
}

func postingKey(fp, id uint64) []byte { return appendPostingKey(make([]byte, 0, 17), fp, id) }

// appendPostingKey appends the posting key (fp, id) to dst.
func appendPostingKey(dst []byte, fp, id uint64) []byte {
	return binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint64(append(dst, spacePostings), fp), id)
}

func postingPrefix(fp uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{spacePostings}, fp)
}

// postingPrefixLen is the length of postingPrefix: the space and the
// fingerprint.
const postingPrefixLen = 9

// keyOrder is the Pebble comparer of indexes created since it was added. It
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
var keyOrder = func() *pebble.Comparer {
	c := *pebble.DefaultComparer
	c.Name = "simhashdb.keys.v1"
	c.Split = splitKey
	c.ImmediateSuccessor = immediateSuccessor
	return &c
}()

// splitKey is keyOrder's Split. Every key of at least postingPrefixLen
// bytes in the postings space is split there (not only 17-byte ones), so
// that comparing prefixes first orders keys as bytes.Compare does:
// TestKeyOrder checks Pebble's rules for Split.
func splitKey(k []byte) int {
	if len(k) >= postingPrefixLen && k[0] == spacePostings {
		return postingPrefixLen
	}
	return len(k)
}

// immediateSuccessor appends to dst the smallest key above the whole-prefix
// key a whose prefix is whole too. Appending a 0 byte, Pebble's default,
// would make a posting prefix a longer key with the same prefix; for those
// the successor is the next fingerprint's prefix (its shortest form).
func immediateSuccessor(dst, a []byte) []byte {
	if len(a) == postingPrefixLen && a[0] == spacePostings {
		return append(dst, prefixEnd(a)...)
	}
	return append(append(dst, a...), 0)
}

func tableKey(space byte, table int, key uint64) []byte {
	return binary.BigEndian.AppendUint64([]byte{space, byte(table)}, key)
}

// prefixEnd returns the smallest key above every key that starts with p.
func prefixEnd(p []byte) []byte {
	end := append([]byte(nil), p...)
	for i := len(end) - 1; i >= 0; i-- {
		end[i]++
		if end[i] != 0 {
			return end[:i+1]
		}
	}
	return nil // p is all 0xff: no upper bound
}

func docValue(fp uint64, name string) []byte {
	return appendDocValue(make([]byte, 0, 8+len(name)), fp, name)
}

// appendDocValue appends the value of a document to dst.
func appendDocValue(dst []byte, fp uint64, name string) []byte {
	return append(binary.BigEndian.AppendUint64(dst, fp), name...)
}

// dirValue is a block directory entry: the block's size. (Version 2 added a
// pending count after it, which version 3 ignores.)
func dirValue(size int) []byte { return binary.AppendUvarint(nil, uint64(size)) }

// appendPendingRun appends to v a run of sorted, distinct permuted
// fingerprints: the first as 8 bytes, then the uvarint gaps. A pending list
// is one run or more, each after a 0 byte (no gap is 0), in the order
// flushes added them: a flush appends a run to a list, with Pebble's
// concatenating merge, without reading it.
func appendPendingRun(v []byte, fps []uint64) []byte {
	v = binary.BigEndian.AppendUint64(v, fps[0])
	for i := 1; i < len(fps); i++ {
		v = binary.AppendUvarint(v, fps[i]-fps[i-1])
	}
	return v
}

// parsePending decodes a pending list of n fingerprints, sorted.
func parsePending(v []byte, n int) ([]uint64, error) {
	if n < 1 || n > len(v) { // every fingerprint takes a byte at least
		return nil, fmt.Errorf("%w: pending list of %d bytes for %d fingerprints", ErrCorrupt, len(v), n)
	}
	out := make([]uint64, 0, n)
	runs, err := scanPending(v, n, func(fp uint64) { out = append(out, fp) })
	if err != nil {
		return nil, err
	}
	if len(out) != n {
		return nil, fmt.Errorf("%w: pending list holds %d fingerprints, the directory says %d", ErrCorrupt, len(out), n)
	}
	if runs > 1 {
		slices.Sort(out)
		for i := 1; i < len(out); i++ {
			if out[i] == out[i-1] {
				return nil, fmt.Errorf("%w: pending list holds %016x twice", ErrCorrupt, out[i])
			}
		}
	}
	return out, nil
}

// scanPending calls fn for each fingerprint of a pending list, in the order
// stored, and returns the number of runs. It fails past max fingerprints.
func scanPending(v []byte, max int, fn func(fp uint64)) (runs int, err error) {
	if len(v) < 8 || max < 1 {
		return 0, fmt.Errorf("%w: pending list of %d bytes for at most %d fingerprints", ErrCorrupt, len(v), max)
	}
	last, n := binary.BigEndian.Uint64(v), 1
	fn(last)
	runs = 1
	for p := 8; p < len(v); n++ {
		if n == max {
			return runs, fmt.Errorf("%w: pending list holds more than %d fingerprints", ErrCorrupt, max)
		}
		gap, m := binary.Uvarint(v[p:])
		if m <= 0 {
			return runs, fmt.Errorf("%w: pending list: bad entry %d", ErrCorrupt, n)
		}
		p += m
		if gap == 0 { // the next run
			if len(v)-p < 8 {
				return runs, fmt.Errorf("%w: pending list: run %d cut short", ErrCorrupt, runs+1)
			}
			last = binary.BigEndian.Uint64(v[p:])
			p += 8
			runs++
		} else if last+gap < last {
			return runs, fmt.Errorf("%w: pending list: bad entry %d", ErrCorrupt, n)
		} else {
			last += gap
		}
		fn(last)
	}
	return runs, nil
}
