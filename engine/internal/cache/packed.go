package cache

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unsafe"
)

// Packed is a table block as the cache keeps it: each fingerprint as its
// offset from the block's first, in the fewest bits that hold the largest
// offset. A block covers a slice of the permuted space (2^64 over the
// table's blocks), so offsets take about 64 - log2(blocks) bits: 49 at 10M
// fingerprints a table, 45 at 100M, against 64 decoded, while a probe still
// reads any entry with one load, a shift and a mask (no decoding). The
// Huffman-coded form takes a few bits less again but is read in order only.
//
// Offsets of 58 to 63 bits are stored in 64: one unaligned 8-byte load
// must hold an entry wherever in its first byte it starts.
//
// The header is small so that a cached block (Entry: the header, the
// reference bit and two pointers) fits one 64-byte cache line: a probe
// reads it and then the line of data its range is in. So the data is a
// bare pointer, its length implied by n and stride.
//
// A unit of postings packs pairs (PackPairs): each fingerprint's offset is
// followed by its document id's, so that a look-up reads both from the
// line it finds the fingerprint in, with no other header between.
type Packed struct {
	base, last uint64         // the first and last fingerprints
	data       unsafe.Pointer // n entries of stride bits, then 8 bytes of slack for the loads
	mask       uint64         // width ones
	n          int32
	width      uint8 // bits per offset, 0..57 or 64
	stride     uint8 // bits from one entry to the next: width, or a pair's
	pairs      bool  // each offset is followed by an id's (PackPairs)
}

// Pack packs fps, ascending.
func Pack(fps []uint64) Packed {
	if len(fps) == 0 {
		return Packed{}
	}
	p := Packed{n: int32(len(fps)), base: fps[0], last: fps[len(fps)-1]}
	p.setWidth(fieldWidth(p.last - p.base))
	p.stride = p.width
	data := make([]byte, p.Bytes())
	for i, v := range fps {
		putField(data, uint(i)*uint(p.stride), v-p.base)
	}
	p.data = unsafe.Pointer(&data[0])
	return p
}

// View returns a Packed over fps themselves, ascending, which it rewrites
// in place as 64-bit offsets from the first: a block decoded for one probe
// and not cached (Cache.Admit) is scanned where it was decoded, as packing
// it would cost more than the probe. fps must outlive the view unchanged.
func View(fps []uint64) Packed {
	if len(fps) == 0 {
		return Packed{}
	}
	p := Packed{n: int32(len(fps)), base: fps[0], last: fps[len(fps)-1], data: unsafe.Pointer(&fps[0])}
	p.setWidth(64)
	p.stride = 64
	toOffsets(fps, p.base)
	return p
}

// PackPairs packs fps, ascending, each with the id beside it in ids (any
// order): a unit's postings. The ids are stored as offsets from the least,
// which the 8 bytes before the data hold: the ids of a unit often lie
// close together (a corpus numbered in order), and then take the bits of
// their spread rather than 8 bytes. Read the ids with id.
func PackPairs(fps, ids []uint64) Packed {
	if len(fps) == 0 {
		return Packed{}
	}
	p := Packed{n: int32(len(fps)), base: fps[0], last: fps[len(fps)-1], pairs: true}
	lo := slices.Min(ids)
	fw, iw := fieldWidth(p.last-p.base), fieldWidth(slices.Max(ids)-lo)
	// A 64-bit field is read with one load only from a byte boundary:
	// where one of a pair takes 64 bits, the other takes whole bytes, so
	// that every field of the 64-bit column starts on one.
	if fw == 64 || iw == 64 {
		fw, iw = (fw+7)&^7, (iw+7)&^7
	}
	p.setWidth(fw)
	p.stride = uint8(fw + iw)
	buf := make([]byte, p.Bytes())
	binary.LittleEndian.PutUint64(buf, lo)
	data := buf[8:]
	for i := range fps {
		off := uint(i) * uint(p.stride)
		putField(data, off, fps[i]-p.base)
		putField(data, off+uint(fw), ids[i]-lo)
	}
	p.data = unsafe.Pointer(&data[0])
	return p
}

// fieldWidth is the bits a field takes to hold offsets up to span: 58 to
// 63 are stored in 64, so that one unaligned 8-byte load holds a field
// wherever in its first byte it starts.
func fieldWidth(span uint64) int {
	if w := bits.Len64(span); w <= 57 {
		return w
	}
	return 64
}

// setWidth sets the width of the offsets and its mask.
func (p *Packed) setWidth(w int) {
	p.width, p.mask = uint8(w), ^uint64(0)>>(64-w) // width 0: a shift by 64 is 0
}

// putField ors v into data at bit off: data has room for an 8-byte load
// and store at off/8, and v fits its field.
func putField(data []byte, off uint, v uint64) {
	x := binary.LittleEndian.Uint64(data[off/8:])
	binary.LittleEndian.PutUint64(data[off/8:], x|v<<(off%8))
}

// Len is the number of fingerprints.
func (p *Packed) Len() int { return int(p.n) }

// At returns fingerprint i, 0 <= i < n: an unaligned little-endian load
// (load64), within the allocation thanks to the slack, a shift and a mask.
// Few instructions matter as much as few loads: a probe's loads miss the
// CPU's caches, and the core overlaps more of them the fewer instructions
// lie between.
func (p *Packed) At(i int) uint64 { return p.base + p.offset(uint(i)*uint(p.stride)) }

// ID returns the id paired with fingerprint i, 0 <= i < n, of packed pairs.
// Its line is fingerprint i's, or the next.
func (p *Packed) ID(i int) uint64 {
	off, w := uint(i)*uint(p.stride)+uint(p.width), uint(p.stride-p.width)
	return load64(unsafe.Add(p.data, -8)) + load64(unsafe.Add(p.data, off/8))>>(off%8)&(^uint64(0)>>(64-w))
}

// offset returns the offset stored at bit off.
func (p *Packed) offset(off uint) uint64 {
	return load64(unsafe.Add(p.data, off/8)) >> (off % 8) & p.mask
}

// Guess is where v would be if the fingerprints were spread evenly between
// the ends: LowerBound's first step, reading no entry.
func (p *Packed) Guess(v uint64) int { return interpolate(p.base, p.last, p.Len(), v) }

// Walk is LowerBound's second step: from guess i, the first i whose
// fingerprint is >= v. It compares offsets, stepping by bit positions:
// fewer instructions a step than at.
func (p *Packed) Walk(v uint64, i int) int {
	if i == int(p.n) || v <= p.base { // guess returned n, or 0
		return i
	}
	t, w := v-p.base, uint(p.stride)
	off := uint(i) * w
	for i > 0 && p.offset(off-w) >= t {
		i, off = i-1, off-w
	}
	for p.offset(off) < t {
		i, off = i+1, off+w
	}
	return i
}

// WalkFrom is walk from guess i < n given vi, fingerprint i, which the
// caller read ahead: a caller that starts many walks at once issues their
// first loads together.
func (p *Packed) WalkFrom(v uint64, i int, vi uint64) int {
	if vi < v {
		for i++; i < int(p.n) && p.At(i) < v; i++ {
		}
		return i
	}
	for i > 0 && p.At(i-1) >= v {
		i--
	}
	return i
}

// LowerBound returns the first i whose fingerprint is >= v.
func (p *Packed) LowerBound(v uint64) int { return p.Walk(v, p.Guess(v)) }

// Scan calls fn(v, d) for each fingerprint v from i on, up to hi, whose
// distance d to pq is at most k. It reads p's fields once: fn may write
// memory, so a loop of at calls would load them again for every entry, and
// a probe of a design with few tables scans hundreds of entries a block.
func (p *Packed) Scan(i int, hi, pq uint64, k int, fn func(v uint64, d int)) {
	base, data, mask, w, n := p.base, p.data, p.mask, uint(p.stride), int(p.n)
	for off := uint(i) * w; i < n; i, off = i+1, off+w {
		v := base + load64(unsafe.Add(data, off/8))>>(off%8)&mask
		if v > hi {
			return
		}
		if d := bits.OnesCount64(v ^ pq); d <= k {
			fn(v, d)
		}
	}
}

// AppendTo appends the fingerprints to dst.
func (p *Packed) AppendTo(dst []uint64) []uint64 {
	for i := range p.Len() {
		dst = append(dst, p.At(i))
	}
	return dst
}

// AppendIDs appends the ids of packed pairs to dst.
func (p *Packed) AppendIDs(dst []uint64) []uint64 {
	for i := range p.Len() {
		dst = append(dst, p.ID(i))
	}
	return dst
}

// Bytes is what p's data takes in memory: none when empty.
func (p *Packed) Bytes() int64 {
	if p.n == 0 {
		return 0
	}
	b := (int64(p.n)*int64(p.stride)+7)/8 + 8
	if p.pairs {
		b += 8 // the ids' base
	}
	return b
}
