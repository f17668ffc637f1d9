package codec

import (
	"fmt"
	"math/bits"

	"github.com/simhashdb/simhashdb/huffman"
)

// Training: the paper's way of choosing a table's Huffman code, from the
// distribution of h over the table, and when to choose a new one.

// H returns the symbol h of fingerprint next after prev (prev < next): the
// number of leading zero bits of next-prev.
func H(prev, next uint64) int { return bits.LeadingZeros64(next - prev) }

// Histogram counts h over a sorted table: the input of Train.
func Histogram(sorted []uint64) (*[huffman.Symbols]uint64, error) {
	var hist [huffman.Symbols]uint64
	for i := 1; i < len(sorted); i++ {
		if sorted[i] <= sorted[i-1] {
			return nil, fmt.Errorf("%w: at %d: %016x after %016x", ErrUnsorted, i, sorted[i], sorted[i-1])
		}
		hist[H(sorted[i-1], sorted[i])]++
	}
	return &hist, nil
}

// Train returns the Huffman code of a sorted table (the paper's method:
// the distribution of h over the table).
func Train(sorted []uint64) (*huffman.Code, error) {
	hist, err := Histogram(sorted)
	if err != nil {
		return nil, err
	}
	return huffman.Build(hist), nil
}

// Retrain is the policy for a table whose code was trained on fewer or
// other fingerprints than it now holds: given the current code (nil if the
// table has none) and the histogram of h over the fingerprints about to be
// written, it returns the code to write them with, and whether that is a
// new one. A new code is worth its keeping (each block names its code, and
// old codes stay for the blocks written with them) when the current one
// would cost more than 2% more bits on hist, and hist is large enough
// (2^16 bits) for the difference to be more than noise.
func Retrain(cur *huffman.Code, hist *[huffman.Symbols]uint64) (code *huffman.Code, trained bool) {
	best := huffman.Build(hist)
	if cur == nil || cur.Cost(hist) > best.Cost(hist)*102/100 && best.Cost(hist) > 1<<16 {
		return best, true
	}
	return cur, false
}
