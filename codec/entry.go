package codec

import (
	"encoding/binary"
	"fmt"

	"github.com/simhashdb/simhashdb/huffman"
)

// step decodes the entry at bit pos of src, which must hold 16 bytes from
// byte pos/8 on. It returns the difference to the previous fingerprint and
// the entry's length in bits, 0 if the bits there start no code word.
// Its two halves inline, so hot loops call them directly.
func step(src []byte, tbl *[1 << huffman.MaxLen]uint16, pos int) (d uint64, bits int) {
	hi, lo, s := window(src, pos)
	return entry(hi, lo, s, uint(tbl[hi<<s>>(64-huffman.MaxLen)]))
}

// window returns the 128 bits of src from byte pos/8 on and the offset of
// bit pos in them.
func window(src []byte, pos int) (hi, lo uint64, s uint) {
	w := src[pos>>3:][:16]
	return binary.BigEndian.Uint64(w[:8]), binary.BigEndian.Uint64(w[8:]), uint(pos & 7)
}

// entry decodes the entry at bit s of the 128-bit window hi:lo, whose
// code word has the table entry e. The entry, at most MaxLen+63 bits, lies
// within the window; shift counts are masked so that they need no guards,
// and the extra >>1 makes a shift by 64 (0 bits below the code word) give 0.
func entry(hi, lo uint64, s, e uint) (d uint64, bits int) {
	cl, low := e&0xf, 63-e>>4
	t := (s + cl) & 63
	v := (hi<<t | lo>>1>>(63-t)) >> 1 >> ((63 - low) & 63)
	if cl == 0 { // a zero entry: no code word
		return 0, 0
	}
	return 1<<(low&63) | v, int(cl + low)
}

// stepAt is step for any bit position: near the end of src it decodes from
// a zero-padded copy.
func stepAt(src []byte, tbl *[1 << huffman.MaxLen]uint16, pos int) (d uint64, bits int) {
	if p := pos >> 3; p+16 <= len(src) {
		return step(src, tbl, pos)
	}
	var buf [16]byte
	if p := pos >> 3; p < len(src) {
		copy(buf[:], src[p:])
	}
	return step(buf[:], tbl, pos&7)
}

func notCode(entry, pos int) error {
	return fmt.Errorf("%w: entry %d at bit %d: not a code word", ErrCorrupt, entry, pos)
}

func wrapped(entry int) error {
	return fmt.Errorf("%w: entry %d is out of order (the sum of differences wrapped)", ErrCorrupt, entry)
}

// load returns the 64 bits of src from bit pos on, most significant first;
// at least the top 57 are src's (zeros past its end).
func load(src []byte, pos int) uint64 {
	i := pos >> 3
	if i+8 <= len(src) {
		return binary.BigEndian.Uint64(src[i:]) << (pos & 7)
	}
	var buf [8]byte
	if i < len(src) {
		copy(buf[:], src[i:])
	}
	return binary.BigEndian.Uint64(buf[:]) << (pos & 7)
}
