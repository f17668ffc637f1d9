package codec

import (
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/simhashdb/simhashdb/huffman"
)

// Decode appends the fingerprints of block, whose key (its last
// fingerprint) is key, to dst. A damaged block is an error wrapping
// ErrCorrupt, never a wrong answer, as far as its layout can tell
// (doc.go).
func Decode(dst []uint64, block []byte, key uint64, codes Codes) ([]uint64, error) {
	return DecodeRange(dst, block, key, codes, 0, math.MaxUint64)
}

// DecodeRange appends the fingerprints in [lo, hi] of block, whose key is
// key, to dst. A version 1 or 2 block stops decoding at the first
// fingerprint above hi; a version 3 block is decoded whole, since its
// fingerprints are known from the key only once all its differences are.
func DecodeRange(dst []uint64, block []byte, key uint64, codes Codes, lo, hi uint64) ([]uint64, error) {
	return decodeRange(dst, block, &key, codes, lo, hi)
}

// decodeRange is DecodeRange for a key that may not be known (nil): a
// version 1 or 2 block holds its key, a version 3 block needs it.
func decodeRange(dst []uint64, block []byte, key *uint64, codes Codes, lo, hi uint64) ([]uint64, error) {
	h, err := ReadHeader(block)
	if err != nil {
		return dst, err
	}
	code, err := codes.Code(h.CodeID)
	if err != nil {
		return dst, err
	}
	src := block[h.payload:] // the entries (then a version 1 or 2 block's checksum: slack for loads)
	end := (h.end - h.payload) * 8
	start := len(dst)
	dst = slices.Grow(dst, h.Count)[:start+h.Count]
	out := dst[start:]
	tbl := code.Table()
	var n, pos int
	var bad error
	chained := false // decoded by run, absolute; else by lanes
	switch {
	case h.Version == 1:
		out[0] = h.first
		n, pos, bad = run(out, src, tbl, 0, hi, 0)
		chained = true
	case h.Version == Version || hi == math.MaxUint64:
		out[0] = h.first // a version 3 block's chains count from its first, 0
		if n, pos, bad = lanes(out, src, tbl, h.split); bad == nil {
			bad = absolute(out, h.Version, key)
		}
	default:
		// Range decodes stop early, so they take the chains one after
		// another, each from the end of the one before.
		out[0] = h.first
		chained = true
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
	if chained && n == len(out) { // decoded to its end by run
		if err := checkKey(out[n-1], h.Version, key); err != nil {
			return dst[:start], err
		}
	}
	if lo == 0 && hi == math.MaxUint64 {
		return dst, nil
	}
	// Fingerprints outside the range were decoded too (the chains have to
	// pass them); drop them here rather than test each in the loop.
	out = out[:n]
	i, _ := slices.BinarySearch(out, lo)
	j, found := slices.BinarySearch(out, hi)
	if found {
		j++
	}
	if i > j {
		i = j
	}
	copy(dst[start:], out[i:j])
	return dst[:start+j-i], nil
}

// absolute makes the values of a block's chains, as lanes leaves them,
// absolute: chain 1 (out[:s1]) counts from first, 0 for a version 3 block,
// whose first fingerprint is its key less the last value; chains 2 and 3
// count from the value before them. Each chain's values increase (run
// checks), so only its last can wrap.
func absolute(out []uint64, version uint8, key *uint64) error {
	s1, s2 := splits(len(out))
	end1 := out[s1-1] // the absolute value before chain 2, from first
	end2, c := end1, uint64(0)
	if s2 > s1 {
		if end2, c = bits.Add64(end1, out[s2-1], 0); c != 0 {
			return wrapped(s2 - 1)
		}
	}
	last := end2
	if s2 < len(out) {
		if last, c = bits.Add64(end2, out[len(out)-1], 0); c != 0 {
			return wrapped(len(out) - 1)
		}
	}
	first := uint64(0) // out[:s1] is absolute already
	if version == Version {
		if err := checkKey(last, version, key); err != nil {
			return err
		}
		first = *key - last
		end1, end2 = end1+first, end2+first
	}
	addTo(out[:s1], first)
	addTo(out[s1:s2], end1)
	addTo(out[s2:], end2)
	if version != Version {
		return checkKey(out[len(out)-1], version, key)
	}
	return nil
}

// checkKey checks a block's key, if known, against the last of its values
// decoded whole: a version 3 block's, from its first fingerprint, must not
// pass it; a version 1 or 2 block's must be it.
func checkKey(last uint64, version uint8, key *uint64) error {
	switch {
	case key == nil && version == Version:
		return fmt.Errorf("%w: a version %d block read without its key", ErrCorrupt, version)
	case key == nil:
	case version == Version && last > *key:
		return fmt.Errorf("%w: its differences add up to %016x, more than its key %016x", ErrCorrupt, last, *key)
	case version != Version && last != *key:
		return fmt.Errorf("%w: ends with %016x, its key is %016x", ErrCorrupt, last, *key)
	}
	return nil
}

func addTo(vals []uint64, base uint64) {
	if base != 0 {
		for i := range vals {
			vals[i] += base
		}
	}
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

// lanes decodes a whole version 2 or 3 block: out[0] holds the first
// value of its first chain, and the later chains start at bits split of
// src. The three chains run in one loop; the later two yield differences
// from the value before them, which absolute adds.
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
