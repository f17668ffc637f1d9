package compression

import (
	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/huffman"
)

// Codec returns the bytes and the number of the blocks the engine's codec
// makes of sorted, distinct fps at blockSize, with a code trained on them
// (its 32 bytes counted too, as a table stores it once), and each block's
// key: a block does not repeat its last fingerprint, which an index keeps
// as the block's key and a set kept alone needs too.
func Codec(fps []uint64, blockSize int) (bytes int64, blocks int, err error) {
	if len(fps) == 0 {
		return 0, 0, nil
	}
	hist, err := codec.Histogram(fps)
	if err != nil {
		return 0, 0, err
	}
	code := huffman.Build(hist)
	cb, err := code.MarshalBinary()
	if err != nil {
		return 0, 0, err
	}
	bytes = int64(len(cb))
	err = codec.Encode(fps, code, 1, blockSize, func(_ uint64, b []byte) error {
		bytes += int64(len(b)) + 8
		blocks++
		return nil
	})
	return bytes, blocks, err
}
