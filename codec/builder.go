package codec

import (
	"encoding/binary"
	"fmt"

	"github.com/simhashdb/simhashdb/huffman"
)

// Builder fills one block at a time from a sorted stream of fingerprints.
type Builder struct {
	code      *huffman.Code
	id        uint32
	size      int
	w         huffman.Writer
	last      uint64
	n         int
	idLen     int     // bytes of the code id after the first byte
	payload   int     // bits of entries
	offs      []int32 // bit offset of each entry
	prevBlock uint64
	started   bool // a fingerprint was added since New (across blocks)
}

// NewBuilder returns a Builder of blocks of at most blockSize bytes written
// with code, which the blocks name as id.
func NewBuilder(code *huffman.Code, id uint32, blockSize int) (*Builder, error) {
	if blockSize < MinBlockSize || blockSize > MaxBlockSize {
		return nil, fmt.Errorf("%w %d: want %d..%d", ErrBlockSize, blockSize, MinBlockSize, MaxBlockSize)
	}
	b := &Builder{code: code, id: id, size: blockSize}
	if id >= inlineIDs {
		b.idLen = uvarintLen(uint64(id))
	}
	return b, nil
}

// encodedLen returns the encoded length of a block of n fingerprints whose
// entries take payload bits and whose chains start at bits split.
func (b *Builder) encodedLen(n, payload int, split [2]int) int {
	entryBytes := (payload + 7) / 8
	d := splitDeltas(n, split, entryBytes)
	return 1 + b.idLen + uvarintLen(uint64(n)) + uvarintLen(d[0]) + uvarintLen(d[1]) + entryBytes
}

// boundLen bounds encodedLen from above without the splits: each differs
// from its guess by at most the entries' bits.
func (b *Builder) boundLen(n, payload int) int {
	entryBytes := (payload + 7) / 8
	return 1 + b.idLen + uvarintLen(uint64(n)) + 2*uvarintLen(uint64(16*entryBytes+1)) + entryBytes
}

// splitsAt returns where the second and third chains of a block of n
// fingerprints start, in bits, when the entry being added (the n-1-th)
// starts at bit next.
func (b *Builder) splitsAt(n, next int) [2]int {
	s1, s2 := splits(n)
	var split [2]int
	for i, e := range [2]int{s1, s2} {
		split[i] = next
		if e < len(b.offs) {
			split[i] = int(b.offs[e])
		}
	}
	return split
}

// splits returns the entries where the second and third decoding chains of
// a block of n fingerprints start (n when a chain is empty).
func splits(n int) (s1, s2 int) {
	m := (n - 1) / 3
	return 1 + m, 1 + 2*m
}

// Add appends fp to the current block. It returns false, adding nothing,
// when fp does not fit: the caller then calls Finish and adds fp again.
// Fingerprints must be strictly increasing, also across blocks.
func (b *Builder) Add(fp uint64) (bool, error) {
	if b.n == 0 {
		if b.started && fp <= b.prevBlock {
			return false, fmt.Errorf("%w: %016x after %016x", ErrUnsorted, fp, b.prevBlock)
		}
		b.last, b.n, b.started = fp, 1, true
		b.w.Reset(nil)
		b.offs = append(b.offs[:0], 0) // entry 0, the first, has no bits
		return true, nil
	}
	if fp <= b.last {
		return false, fmt.Errorf("%w: %016x after %016x", ErrUnsorted, fp, b.last)
	}
	h := H(b.last, fp)
	cost := b.code.Len(h) + 63 - h
	// The splits' lengths need two divisions: only near the block's end.
	if b.boundLen(b.n+1, b.payload+cost) > b.size && b.encodedLen(b.n+1, b.payload+cost, b.splitsAt(b.n+1, b.payload)) > b.size {
		return false, nil
	}
	b.offs = append(b.offs, int32(b.payload))
	b.code.Encode(&b.w, h)
	b.w.WriteBits64(fp-b.last, uint(63-h)) // the bits below the top 1-bit
	b.payload += cost
	b.last = fp
	b.n++
	return true, nil
}

// Len returns the number of fingerprints in the current block.
func (b *Builder) Len() int { return b.n }

// Finish appends the current block to dst and returns it with the block's
// key, its last fingerprint, which the block does not hold (the decoder
// is given it), and starts a new block. It returns dst unchanged if the
// block is empty.
func (b *Builder) Finish(dst []byte) (key uint64, block []byte) {
	if b.n == 0 {
		return 0, dst
	}
	entries := b.w.Bytes()
	dst = appendHeader(dst, b.id, b.n, b.splitsAt(b.n, b.payload), len(entries))
	dst = append(dst, entries...)
	key = b.last
	b.prevBlock = b.last
	b.n, b.payload = 0, 0
	return key, dst
}

// appendHeader appends the header of a version 3 block of n fingerprints,
// whose chains start at bits split of its entryBytes bytes of entries.
func appendHeader(dst []byte, id uint32, n int, split [2]int, entryBytes int) []byte {
	if id < inlineIDs {
		dst = append(dst, byte(id)<<2|Version)
	} else {
		dst = binary.AppendUvarint(append(dst, inlineIDs<<2|Version), uint64(id))
	}
	dst = binary.AppendUvarint(dst, uint64(n))
	d := splitDeltas(n, split, entryBytes)
	dst = binary.AppendUvarint(dst, d[0])
	return binary.AppendUvarint(dst, d[1])
}

// splitDeltas returns how a block's splits differ from where they would
// be if every entry were as long, zigzag-coded: a byte each, mostly.
func splitDeltas(n int, split [2]int, entryBytes int) [2]uint64 {
	est := splitGuess(n, entryBytes)
	var d [2]uint64
	for i := range d {
		x := int64(split[i] - est[i])
		d[i] = uint64(x<<1 ^ x>>63)
	}
	return d
}

// splitGuess returns where the chains of a block of n fingerprints whose
// entries take entryBytes bytes would start if every entry were as long.
func splitGuess(n, entryBytes int) [2]int {
	if n < 2 {
		return [2]int{}
	}
	s1, s2 := splits(n)
	bitsAll, d := uint64(entryBytes)*8, uint64(n-1)
	var g [2]int
	for i, s := range [2]int{s1, s2} {
		x := bitsAll * uint64(s-1) // wraps only for blocks far past MaxBlockSize, which then fail the checks
		if x>>32 == 0 && d>>32 == 0 {
			g[i] = int(uint32(x) / uint32(d)) // the same quotient; a 32-bit division is much the cheaper on x86
		} else {
			g[i] = int(x / d)
		}
	}
	return g
}

// Encode splits sorted, distinct fingerprints into blocks and calls emit for
// each, in order, with its key. The block passed to emit is reused after emit
// returns.
func Encode(fps []uint64, code *huffman.Code, id uint32, blockSize int, emit func(key uint64, block []byte) error) error {
	b, err := NewBuilder(code, id, blockSize)
	if err != nil {
		return err
	}
	var buf []byte
	for _, fp := range fps {
		ok, err := b.Add(fp)
		if err != nil {
			return err
		}
		if !ok {
			var key uint64
			key, buf = b.Finish(buf[:0])
			if err := emit(key, buf); err != nil {
				return err
			}
			if _, err := b.Add(fp); err != nil {
				return err
			}
		}
	}
	if b.Len() > 0 {
		key, buf := b.Finish(buf[:0])
		return emit(key, buf)
	}
	return nil
}
