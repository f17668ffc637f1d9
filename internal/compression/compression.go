// Package compression measures what a set of fingerprints costs in each
// way of keeping it: the engine's codec at several block sizes, beside the
// information bound of a uniformly drawn set, plain and partitioned
// Elias-Fano, roaring64, zstd over the gaps and plain Pebble keys with
// Zstd. `simhashdb compression` reports it for a user's fingerprints; the
// bench suite's codec section uses the same code.
//
// Every size is of the sorted, distinct fingerprints: a table of the index
// holds each fingerprint once, however many documents share it.
package compression

import (
	"fmt"

	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/simhashdb/simhashdb/codec"
)

// Row is one way of keeping the set.
type Row struct {
	Method    string  `json:"method"`
	Bytes     int64   `json:"bytes"`
	BitsPerFP float64 `json:"bits_per_fp"`
	// OverBound is how far BitsPerFP lies above the bound, in percent.
	OverBound float64 `json:"over_bound_pct"`
}

// Report is the set measured every way.
type Report struct {
	N int `json:"n"` // distinct fingerprints
	// Bound is log2 C(2^64, N) / N: the fewest bits per fingerprint that
	// any encoding spends on average over uniformly drawn sets of N. A set
	// that is not uniform (clustered, real text) can go below it.
	Bound float64 `json:"bound_bits_per_fp"`
	Rows  []Row   `json:"rows"`
}

// DefaultBlockSizes are the codec's block sizes a report shows: the
// paper's 1 KiB and its neighbours.
var DefaultBlockSizes = []int{256, 512, 1024, 2048, 4096}

// Measure measures sorted, distinct fingerprints fps every way, the codec at
// each of blockSizes.
func Measure(fps []uint64, blockSizes []int) (*Report, error) {
	for i := 1; i < len(fps); i++ {
		if fps[i] <= fps[i-1] {
			return nil, fmt.Errorf("compression: the fingerprints are not sorted and distinct (%d: %#x after %#x)", i, fps[i], fps[i-1])
		}
	}
	r := &Report{N: len(fps), Bound: codec.Bound(len(fps))}
	add := func(method string, bytes int64) {
		row := Row{Method: method, Bytes: bytes}
		if len(fps) > 0 {
			row.BitsPerFP = float64(bytes*8) / float64(len(fps))
		}
		if r.Bound > 0 {
			row.OverBound = 100 * (row.BitsPerFP/r.Bound - 1)
		}
		r.Rows = append(r.Rows, row)
	}
	for _, bs := range blockSizes {
		size, _, err := Codec(fps, bs)
		if err != nil {
			return nil, err
		}
		add(fmt.Sprintf("codec, %d-byte blocks", bs), size)
	}
	add("Elias-Fano", (EliasFanoBits(fps)+7)/8)
	add("partitioned Elias-Fano", (PartitionedEliasFanoBits(fps)+7)/8)
	add("roaring64", Roaring64Bytes(fps))
	for _, z := range []struct {
		name string
		gaps []byte
	}{{"zstd over 8-byte gaps", fixedGaps(fps)}, {"zstd over varint gaps", varintGaps(fps)}} {
		n, err := ZstdBytes(z.gaps)
		if err != nil {
			return nil, err
		}
		add(z.name, n)
	}
	n, err := PebbleKeysBytes(fps, sstable.ZstdCompression)
	if err != nil {
		return nil, err
	}
	add("Pebble keys, Zstd", n)
	return r, nil
}
