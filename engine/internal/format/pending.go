package format

import (
	"encoding/binary"
	"fmt"
	"slices"
)

// A pending list holds the fingerprints that flushes added to a block
// without rewriting it (flush.go); readers merge it with the block. This
// file is the one home of its byte layout: one encoder (AppendPendingRun),
// one decoder (ScanPending, and ParsePending over it), one fuzz target
// (FuzzParsePending).

// PendingMax is the most pending fingerprints a block keeps beside it
// before a flush merges them in. A flush that adds a few fingerprints to a
// block appends them to its pending list (a few bytes each, without reading
// the list or the block) instead of rewriting the whole block; once a block
// has gathered PendingMax, it is rewritten. That divides the bytes a large
// index writes per added fingerprint by about PendingMax in each table, for
// a counter per block in memory, a second read when a block is not cached
// and a longer list for a query to search.
const PendingMax = 96

// AppendPendingRun appends to v a run of sorted, distinct permuted
// fingerprints: the first as 8 bytes, then the uvarint gaps. A pending list
// is one run or more, each after a 0 byte (no gap is 0), in the order
// flushes added them: a flush appends a run to a list, with Pebble's
// concatenating merge, without reading it.
func AppendPendingRun(v []byte, fps []uint64) []byte {
	v = binary.BigEndian.AppendUint64(v, fps[0])
	for i := 1; i < len(fps); i++ {
		v = binary.AppendUvarint(v, fps[i]-fps[i-1])
	}
	return v
}

// ParsePending decodes a pending list of n fingerprints, sorted.
func ParsePending(v []byte, n int) ([]uint64, error) {
	if n < 1 || n > len(v) { // every fingerprint takes a byte at least
		return nil, fmt.Errorf("%w: pending list of %d bytes for %d fingerprints", ErrCorrupt, len(v), n)
	}
	out := make([]uint64, 0, n)
	runs, err := ScanPending(v, n, func(fp uint64) { out = append(out, fp) })
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

// ScanPending calls fn for each fingerprint of a pending list, in the order
// stored, and returns the number of runs. It fails past max fingerprints.
func ScanPending(v []byte, max int, fn func(fp uint64)) (runs int, err error) {
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
