package engine

import (
	"encoding/binary"
	"math/bits"
	"slices"
	"unsafe"
)

// packed is a table block as the cache keeps it: each fingerprint as its
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
// The header is small so that a cached block (cachedBlock: the header, the
// reference bit and two pointers) fits one 64-byte cache line: a probe
// reads it and then the line of data its range is in. So the data is a
// bare pointer, its length implied by n and width.
type packed struct {
	base, last uint64         // the first and last fingerprints
	data       unsafe.Pointer // n offsets of width bits, then 8 bytes of slack for the loads
	mask       uint64         // width ones
	n          int32
	width      uint8 // bits per offset, 0..57 or 64
}

// pack packs fps, ascending.
func pack(fps []uint64) packed {
	if len(fps) == 0 {
		return packed{}
	}
	return packFrom(fps, fps[0], fps[len(fps)-1])
}

// packIDs packs values in any order (a unit's document ids, beside its
// fingerprints) as offsets from the least. Read them with at only: guess
// and lowerBound need ascending values.
func packIDs(vals []uint64) packed {
	if len(vals) == 0 {
		return packed{}
	}
	return packFrom(vals, slices.Min(vals), slices.Max(vals))
}

// packFrom packs vals, all in [lo, hi].
func packFrom(vals []uint64, lo, hi uint64) packed {
	p := packed{n: int32(len(vals)), base: lo, last: hi}
	w := bits.Len64(hi - lo)
	if w > 57 {
		w = 64
	}
	p.width, p.mask = uint8(w), ^uint64(0)>>(64-w) // width 0: a shift by 64 is 0
	data := make([]byte, p.bytes())
	for i, v := range vals {
		off := uint(i * w)
		x := binary.LittleEndian.Uint64(data[off/8:])
		binary.LittleEndian.PutUint64(data[off/8:], x|(v-lo)<<(off%8))
	}
	p.data = unsafe.Pointer(&data[0])
	return p
}

// len is the number of fingerprints.
func (p *packed) len() int { return int(p.n) }

// at returns fingerprint i, 0 <= i < n: an unaligned little-endian load
// (load64), within the allocation thanks to the slack, a shift and a mask.
// Few instructions matter as much as few loads: a probe's loads miss the
// CPU's caches, and the core overlaps more of them the fewer instructions
// lie between.
func (p *packed) at(i int) uint64 { return p.base + p.offset(uint(i)*uint(p.width)) }

// offset returns the offset stored at bit off.
func (p *packed) offset(off uint) uint64 {
	return load64(unsafe.Add(p.data, off/8)) >> (off % 8) & p.mask
}

// guess is where v would be if the fingerprints were spread evenly between
// the ends: lowerBound's first step, reading no entry.
func (p *packed) guess(v uint64) int {
	n := p.len()
	if n == 0 || v <= p.base {
		return 0
	}
	if v > p.last {
		return n
	}
	step := (p.last-p.base)/uint64(n) + 1
	return min(int((v-p.base)/step), n-1)
}

// walk is lowerBound's second step: from guess i, the first i whose
// fingerprint is >= v. It compares offsets, stepping by bit positions, so
// that it is small enough for the compiler to inline into the probe.
func (p *packed) walk(v uint64, i int) int {
	if i == int(p.n) || v <= p.base { // guess returned n, or 0
		return i
	}
	t, w := v-p.base, uint(p.width)
	off := uint(i) * w
	for i > 0 && p.offset(off-w) >= t {
		i, off = i-1, off-w
	}
	for p.offset(off) < t {
		i, off = i+1, off+w
	}
	return i
}

// lowerBound returns the first i whose fingerprint is >= v.
func (p *packed) lowerBound(v uint64) int { return p.walk(v, p.guess(v)) }

// scan calls fn(v, d) for each fingerprint v from i on, up to hi, whose
// distance d to pq is at most k. It reads p's fields once: fn may write
// memory, so a loop of at calls would load them again for every entry, and
// a probe of a design with few tables scans hundreds of entries a block.
func (p *packed) scan(i int, hi, pq uint64, k int, fn func(v uint64, d int)) {
	base, data, mask, w, n := p.base, p.data, p.mask, uint(p.width), int(p.n)
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

// appendTo appends the fingerprints to dst.
func (p *packed) appendTo(dst []uint64) []uint64 {
	for i := range p.len() {
		dst = append(dst, p.at(i))
	}
	return dst
}

// bytes is what p's data takes in memory: none when empty.
func (p *packed) bytes() int64 {
	if p.n == 0 {
		return 0
	}
	return (int64(p.n)*int64(p.width)+7)/8 + 8
}

// touch is given loads made only to bring their lines into the CPU's
// caches ahead of their use: the call keeps the compiler from dropping
// them, and the core does not wait for a load whose value nothing reads.
//
//go:noinline
func touch(uint64) {}
