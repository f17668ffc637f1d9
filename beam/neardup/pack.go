package neardup

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"slices"
)

// BatchSize is the most fingerprints a packed batch holds.
const BatchSize = 8192

// appendFP appends a fingerprint to a packed batch: 8 bytes, big-endian.
func appendFP(dst []byte, v uint64) []byte { return binary.BigEndian.AppendUint64(dst, v) }

// unpack appends the fingerprints of a packed batch to dst.
func unpack(dst []uint64, b []byte) ([]uint64, error) {
	if len(b)%8 != 0 {
		return dst, fmt.Errorf("neardup: packed batch of %d bytes, not a multiple of 8", len(b))
	}
	for i := 0; i < len(b); i += 8 {
		dst = append(dst, binary.BigEndian.Uint64(b[i:]))
	}
	return dst, nil
}

// appendCounted appends a fingerprint and how often it occurs to a packed
// batch of counted fingerprints: 8 bytes big-endian and a uvarint.
func appendCounted(dst []byte, v uint64, n int64) []byte {
	return binary.AppendUvarint(binary.BigEndian.AppendUint64(dst, v), uint64(n))
}

// unpackCounted calls fn with each fingerprint and count of a packed batch
// of counted fingerprints.
func unpackCounted(b []byte, fn func(v uint64, n int64)) error {
	for len(b) > 0 {
		if len(b) < 9 {
			return fmt.Errorf("neardup: counted batch cut off (%d bytes left)", len(b))
		}
		v := binary.BigEndian.Uint64(b)
		n, size := binary.Uvarint(b[8:])
		if size <= 0 || n == 0 || n > 1<<62 {
			return fmt.Errorf("neardup: counted batch: bad count after fingerprint %#x", v)
		}
		fn(v, int64(n))
		b = b[8+size:]
	}
	return nil
}

// counted is a fingerprint and how often it occurs.
type counted struct {
	v uint64
	n int64
}

// collectCounted returns the counted fingerprints of batches, sorted by
// fingerprint (a fingerprint may be there more than once).
func collectCounted(batches func(*[]byte) bool) ([]counted, error) {
	var all []counted
	var b []byte
	for batches(&b) {
		if err := unpackCounted(b, func(v uint64, n int64) { all = append(all, counted{v, n}) }); err != nil {
			return nil, err
		}
	}
	slices.SortFunc(all, func(x, y counted) int { return cmp.Compare(x.v, y.v) })
	return all, nil
}
