package codec

import (
	"errors"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/simhashdb/simhashdb/huffman"
)

// Version is the block format version written by this package. Versions
// 1 and 2 are read too.
const Version = 3

// DefaultBlockSize is the paper's block size.
const DefaultBlockSize = 1024

// MinBlockSize and MaxBlockSize bound the block size.
const (
	MinBlockSize = 64
	MaxBlockSize = 1 << 20
)

// checksumLen is the length of the checksum of a version 1 or 2 block and
// of a block in a stream.
const checksumLen = 4

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Errors. Decoding errors wrap ErrCorrupt and say what is wrong.
var (
	ErrCorrupt     = errors.New("codec: corrupt block")
	ErrUnsorted    = errors.New("codec: fingerprints not strictly increasing")
	ErrUnknownCode = errors.New("codec: unknown Huffman code")
	ErrBlockSize   = errors.New("codec: invalid block size")
)

// Codes finds the Huffman code a block names.
type Codes interface {
	Code(id uint32) (*huffman.Code, error)
}

// CodeMap is a Codes backed by a map.
type CodeMap map[uint32]*huffman.Code

// Code implements Codes.
func (m CodeMap) Code(id uint32) (*huffman.Code, error) {
	c, ok := m[id]
	if !ok {
		return nil, fmt.Errorf("%w %d", ErrUnknownCode, id)
	}
	return c, nil
}

// Bound returns log2(C(2^64, n))/n, the information bound: the fewest bits
// per fingerprint that any encoding of a set of n distinct 64-bit values can
// average.
func Bound(n int) float64 {
	if n <= 0 {
		return 0
	}
	lg, _ := math.Lgamma(float64(n) + 1)
	return 64 - lg/math.Ln2/float64(n) // n << 2^64: log2 C(2^64,n) ~ 64n - log2 n!
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}
