// Package codec is the on-disk block format of simhashdb's permuted tables,
// the compression scheme of Manku et al. section 3.1.3: a block holds sorted,
// distinct (permuted) fingerprints; the first is stored whole, and each next
// one as the Huffman code of h followed by the 63-h bits below the most
// significant 1-bit, with one change: h is the position of the top 1-bit of
// the difference to the predecessor (its leading zeros), where the paper
// takes their XOR. The XOR's top bit sits above the difference's whenever
// adding the gap carries, so the XOR form stores the carried bits, which are
// all but determined, and codes positions where the predecessor holds a 1,
// which cannot occur: the difference comes closer to the information bound
// (docs/performance.md, compression).
//
// Layout of a block (at most the block size, 1024 bytes by default):
//
//	version      1 byte (2)
//	code id      uvarint: which Huffman code the block was written with
//	count        uvarint: number of fingerprints, >= 1
//	splits       2 x uvarint: bit offsets in entries of entries m+1 and 2m+1,
//	             m = (count-1)/3: where the second and third chains start
//	first        8 bytes, big-endian
//	entries      count-1 x (Huffman(h), 63-h bits of next-prev below its top
//	             1-bit), most significant bit first,
//	             zero-padded to a byte
//	checksum     CRC-32C of all the above, 4 bytes little-endian
//
// The key of a block is its last fingerprint.
//
// Decoding an entry needs the bit position where the previous one ended, so
// a block is one long dependency chain of loads and table look-ups. The
// split offsets, 4-5 bytes a block, cut it in three: entries 1..m,
// m+1..2m and 2m+1..count-1 are decoded as three independent chains in one
// loop, the later two as differences from the entry before them, and a pass
// of additions then makes them absolute. An out-of-order core overlaps the
// chains. On amd64 that loop is written in assembly, because Go's register
// allocator spills the three chains' state on every step (the gain is in
// docs/performance.md); build
// with the purego tag for the Go loop, which is also its reference in
// tests. Version 1 blocks (no splits) are still read.
package codec

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math"
	"slices"

	"github.com/simhashdb/simhashdb/huffman"
)

// Version is the block format version written by this package. Version 1,
// the same without the split offsets, is read too.
const Version = 2

// DefaultBlockSize is the paper's block size.
const DefaultBlockSize = 1024

// MinBlockSize and MaxBlockSize bound the block size.
const (
	MinBlockSize = 64
	MaxBlockSize = 1 << 20
)

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

// Builder fills one block at a time from a sorted stream of fingerprints.
type Builder struct {
	code      *huffman.Code
	id        uint32
	size      int
	w         huffman.Writer
	first     uint64
	last      uint64
	n         int
	idLen     int
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
	var tmp [binary.MaxVarintLen32]byte
	return &Builder{code: code, id: id, size: blockSize, idLen: binary.PutUvarint(tmp[:], uint64(id))}, nil
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// encodedLen returns an upper bound of the encoded length of a block of n
// fingerprints whose entries take payload bits: the split offsets are below
// payload.
func (b *Builder) encodedLen(n, payload int) int {
	return 1 + b.idLen + uvarintLen(uint64(n)) + 2*uvarintLen(uint64(payload)) + 8 + (payload+7)/8 + checksumLen
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
		b.first, b.last, b.n, b.started = fp, fp, 1, true
		b.w.Reset(nil)
		b.offs = append(b.offs[:0], 0) // entry 0, the first, has no bits
		return true, nil
	}
	if fp <= b.last {
		return false, fmt.Errorf("%w: %016x after %016x", ErrUnsorted, fp, b.last)
	}
	h := H(b.last, fp)
	cost := b.code.Len(h) + 63 - h
	if b.encodedLen(b.n+1, b.payload+cost) > b.size {
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
// key, its last fingerprint, and starts a new block. It returns dst
// unchanged if the block is empty.
func (b *Builder) Finish(dst []byte) (key uint64, block []byte) {
	if b.n == 0 {
		return 0, dst
	}
	start := len(dst)
	dst = append(dst, Version)
	dst = binary.AppendUvarint(dst, uint64(b.id))
	dst = binary.AppendUvarint(dst, uint64(b.n))
	s1, s2 := splits(b.n)
	for _, e := range [2]int{s1, s2} {
		off := b.payload // a block of one fingerprint has no entries
		if e < b.n {
			off = int(b.offs[e])
		}
		dst = binary.AppendUvarint(dst, uint64(off))
	}
	dst = binary.BigEndian.AppendUint64(dst, b.first)
	dst = append(dst, b.w.Bytes()...)
	dst = binary.LittleEndian.AppendUint32(dst, crc32.Checksum(dst[start:], castagnoli))
	key = b.last
	b.prevBlock = b.last
	b.n, b.payload = 0, 0
	return key, dst
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

// Header is the fixed part of a block.
type Header struct {
	Version uint8
	CodeID  uint32
	Count   int
	First   uint64
	// payload is the offset of the entries, split the bit offsets of the
	// second and third chains' first entries in them.
	payload int
	split   [2]int
}

// ReadHeader verifies the block's checksum and returns its header.
func ReadHeader(block []byte) (Header, error) {
	var h Header
	if len(block) < 1+1+1+8+checksumLen {
		return h, fmt.Errorf("%w: %d bytes is shorter than any block", ErrCorrupt, len(block))
	}
	body := block[:len(block)-checksumLen]
	want := binary.LittleEndian.Uint32(block[len(block)-checksumLen:])
	if got := crc32.Checksum(body, castagnoli); got != want {
		return h, fmt.Errorf("%w: checksum %08x, computed %08x", ErrCorrupt, want, got)
	}
	h.Version = body[0]
	if h.Version != Version && h.Version != 1 {
		return h, fmt.Errorf("%w: format version %d, this build reads 1 and %d", ErrCorrupt, h.Version, Version)
	}
	p := 1
	id, n := binary.Uvarint(body[p:])
	if n <= 0 || id > 1<<32-1 {
		return h, fmt.Errorf("%w: bad code id", ErrCorrupt)
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
	if len(body)-p < 8 {
		return h, fmt.Errorf("%w: truncated header", ErrCorrupt)
	}
	h.CodeID, h.Count = uint32(id), int(count)
	h.First = binary.BigEndian.Uint64(body[p:])
	h.payload = p + 8
	h.split = [2]int{int(split[0]), int(split[1])}
	return h, nil
}

// Decode appends the block's fingerprints to dst.
func Decode(dst []uint64, block []byte, codes Codes) ([]uint64, error) {
	return DecodeRange(dst, block, codes, 0, ^uint64(0))
}

// DecodeRange appends the block's fingerprints in [lo, hi] to dst. It stops
// decoding at the first fingerprint above hi. The checksum of the whole block
// is verified first, so a damaged block is an error, never a wrong answer.
func DecodeRange(dst []uint64, block []byte, codes Codes, lo, hi uint64) ([]uint64, error) {
	h, err := ReadHeader(block)
	if err != nil {
		return dst, err
	}
	code, err := codes.Code(h.CodeID)
	if err != nil {
		return dst, err
	}
	src := block[h.payload:] // the entries, then the checksum: slack for loads
	end := (len(src) - checksumLen) * 8
	start := len(dst)
	dst = slices.Grow(dst, h.Count)[:start+h.Count]
	out := dst[start:]
	out[0] = h.First
	tbl := code.Table()
	var n, pos int
	var bad error
	switch {
	case h.Version == 1:
		n, pos, bad = run(out, src, tbl, 0, hi, 0)
	case hi == math.MaxUint64:
		n, pos, bad = lanes(out, src, tbl, h.split)
	default:
		// Range decodes stop early, so they take the chains one after
		// another, each from the end of the one before.
		s1, s2 := splits(h.Count)
		from := 0
		for c, to := range []int{s1, s2, len(out)} {
			n, pos, bad = run(out[from:to], src, tbl, pos, hi, from)
			if n += from; bad != nil || n < to {
				break
			}
			if c < 2 && pos != h.split[c] {
				bad = fmt.Errorf("%w: chain %d ends at bit %d, header says %d", ErrCorrupt, c+1, pos, h.split[c])
				break
			}
			from = to - 1
		}
	}
	switch {
	case bad != nil:
		return dst[:start], bad
	case pos > end:
		return dst[:start], fmt.Errorf("%w: entries run %d bits past the block's end", ErrCorrupt, pos-end)
	case n == len(out) && (end-pos >= 8 || end > pos && load(src, pos)>>(64-uint(end-pos)) != 0):
		return dst[:start], fmt.Errorf("%w: %d bits after the last entry", ErrCorrupt, end-pos)
	}
	// Fingerprints below lo were decoded too (the chain has to pass them);
	// drop them here rather than test each in the loop.
	skip, _ := slices.BinarySearch(out[:n], lo)
	copy(out, out[skip:n])
	return dst[:start+n-skip], nil
}

// run decodes the entries that follow out[0] from bit pos of src into
// out[1:], stopping at the first fingerprint above hi. It returns how many
// fingerprints of out hold results (0 if out[0] > hi) and the bit position
// reached; the caller checks that against the payload's end. Errors number
// the entries from entry0, out[0]'s.
func run(out []uint64, src []byte, tbl *[1 << huffman.MaxLen]uint16, pos int, hi uint64, entry0 int) (n, end int, err error) {
	fp := out[0]
	if fp > hi {
		return 0, pos, nil
	}
	for i := 1; i < len(out); i++ {
		d, w := stepAt(src, tbl, pos)
		if w == 0 {
			return i, pos, notCode(entry0+i, pos)
		}
		pos += w
		if fp+d <= fp {
			return i, pos, wrapped(entry0 + i)
		}
		fp += d
		if fp > hi {
			return i, pos, nil
		}
		out[i] = fp
	}
	return len(out), pos, nil
}

// lanes decodes a whole version 2 block: out[0] holds its first
// fingerprint, and the later chains start at bits split of src. The three
// chains run in one loop; the later two yield differences from the value
// before them, added in a pass at the end.
func lanes(out []uint64, src []byte, tbl *[1 << huffman.MaxLen]uint16, split [2]int) (n, end int, err error) {
	s1, s2 := splits(len(out))
	// The quick loop takes the chains as far as it can; then a, b, c are
	// the next entries of each.
	st := laneState{pos: [3]int{0, split[0], split[1]}, fp: [3]uint64{out[0], 0, 0}}
	var i, part int
	if m := s1 - 1; m > 0 && len(src) >= 16 {
		i, part = quickLanes(&st, src, tbl, out[1:], m)
	}
	a, b, c := 1+i, s1+i, s2+i
	if part > 0 {
		a++
	}
	if part > 1 {
		b++
	}
	pa, pb, pc := st.pos[0], st.pos[1], st.pos[2]
	fa, fb, fc := st.fp[0], st.fp[1], st.fp[2]
	// The rest of each chain, near the block's end or where it is damaged,
	// takes the careful loop.
	if n, pa, err = tail(out, a, s1, fa, src, tbl, pa); err != nil {
		return n, pa, err
	}
	if pa != split[0] {
		return s1, pa, fmt.Errorf("%w: chain 1 ends at bit %d, header says %d", ErrCorrupt, pa, split[0])
	}
	if _, pb, err = tail(out, b, s2, fb, src, tbl, pb); err != nil {
		return s1, pb, err
	}
	if pb != split[1] {
		return s1, pb, fmt.Errorf("%w: chain 2 ends at bit %d, header says %d", ErrCorrupt, pb, split[1])
	}
	if _, pc, err = tail(out, c, len(out), fc, src, tbl, pc); err != nil {
		return s1, pc, err
	}
	if err := rebase(out[s1:s2], out[s1-1], s1); err != nil {
		return s1, pc, err
	}
	if err := rebase(out[s2:], out[s2-1], s2); err != nil {
		return s1, pc, err
	}
	return len(out), pc, nil
}

// tail decodes entries from..to-1 of a chain whose value before them is fp
// and whose next entry starts at bit pos, with run's care.
func tail(out []uint64, from, to int, fp uint64, src []byte, tbl *[1 << huffman.MaxLen]uint16, pos int) (n, end int, err error) {
	if from >= to {
		return to, pos, nil
	}
	save := out[from-1] // another chain's value when this one has not begun
	out[from-1] = fp
	n, end, err = run(out[from-1:to], src, tbl, pos, math.MaxUint64, from-1)
	out[from-1] = save
	return from - 1 + n, end, err
}

// rebase adds base to a chain's values, differences from it: each is at
// least 1 more than the one before unless they wrapped (run checks), so
// adding base wraps iff it wraps the last.
func rebase(vals []uint64, base uint64, entry0 int) error {
	if len(vals) == 0 {
		return nil
	}
	if base+vals[len(vals)-1] <= base {
		return wrapped(entry0 + len(vals) - 1)
	}
	for i := range vals {
		vals[i] += base
	}
	return nil
}

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
