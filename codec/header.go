package codec

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
)

// Header is the fixed part of a block.
type Header struct {
	Version uint8
	CodeID  uint32
	Count   int
	// payload is the offset of the entries, split the bit offsets of the
	// second and third chains' first entries in them; end is the offset
	// where the entries end (before a version 1 or 2 block's checksum).
	payload, end int
	split        [2]int
	// first is a version 1 or 2 block's first fingerprint; a version 3
	// block's is known once its entries are decoded.
	first uint64
}

// ReadHeader returns the block's header. For a version 1 or 2 block it
// verifies the block's checksum first.
func ReadHeader(block []byte) (Header, error) {
	var h Header
	if len(block) == 0 {
		return h, fmt.Errorf("%w: empty", ErrCorrupt)
	}
	h.Version = BlockVersion(block)
	body := block
	switch h.Version {
	case 1, 2:
		if len(block) < 1+1+1+8+checksumLen {
			return h, fmt.Errorf("%w: %d bytes is shorter than any version %d block", ErrCorrupt, len(block), h.Version)
		}
		body = block[:len(block)-checksumLen]
		want := binary.LittleEndian.Uint32(block[len(block)-checksumLen:])
		if got := crc32.Checksum(body, castagnoli); got != want {
			return h, fmt.Errorf("%w: checksum %08x, computed %08x", ErrCorrupt, want, got)
		}
	case Version:
	default:
		return h, fmt.Errorf("%w: format version %d, this build reads 1 to %d", ErrCorrupt, h.Version, Version)
	}
	p := 1
	id, n := uint64(block[0]>>2), 0
	if h.Version < Version || id == inlineIDs {
		if id, n = binary.Uvarint(body[p:]); n <= 0 || id > 1<<32-1 {
			return h, fmt.Errorf("%w: bad code id", ErrCorrupt)
		}
	}
	p += n
	count, n := binary.Uvarint(body[p:])
	if n <= 0 || count == 0 || count > uint64(len(block))*8 {
		return h, fmt.Errorf("%w: bad count", ErrCorrupt)
	}
	p += n
	var split [2]uint64
	if h.Version >= 2 {
		for i := range split {
			if split[i], n = binary.Uvarint(body[p:]); n <= 0 || split[i] > uint64(len(block))*8 {
				return h, fmt.Errorf("%w: bad split offset", ErrCorrupt)
			}
			p += n
		}
	}
	if h.Version == Version {
		// The splits are stored as their differences from a guess.
		guess := splitGuess(int(count), len(body)-p)
		for i, d := range split {
			s := int64(guess[i]) + (int64(d>>1) ^ -int64(d&1))
			if s < 0 || s > int64(len(body)-p)*8 {
				return h, fmt.Errorf("%w: bad split offset", ErrCorrupt)
			}
			split[i] = uint64(s)
		}
	}
	if h.Version < 3 {
		if len(body)-p < 8 {
			return h, fmt.Errorf("%w: truncated header", ErrCorrupt)
		}
		h.first = binary.BigEndian.Uint64(body[p:])
		p += 8
	}
	h.CodeID, h.Count = uint32(id), int(count)
	h.payload, h.end = p, len(body)
	h.split = [2]int{int(split[0]), int(split[1])}
	return h, nil
}

// BlockVersion returns the format version a block is written in, from
// its first byte, 0 for an empty one; ReadHeader checks it.
func BlockVersion(block []byte) uint8 {
	switch {
	case len(block) == 0:
		return 0
	case block[0]&3 == Version: // the code id above
		return Version
	}
	return block[0]
}

// inlineIDs is the number of code ids that a version 3 block keeps in its
// first byte, above the version; a larger id follows it as a uvarint, and
// the byte holds inlineIDs.
const inlineIDs = 63
