// Package radix sorts 64-bit keys by radix sort, several times faster than a
// comparison sort at millions of keys, which is what building a permuted
// table costs: Sort scatters by two digits of top bits and sorts the small
// buckets; SortPairs and SortTop take least-significant-digit passes of one
// byte.
package radix

import (
	"math/bits"
	"slices"
)

// small is the length below which a comparison sort is faster.
const small = 1 << 12

// Sort sorts x in place, by most significant digits: it scatters the keys
// into buckets by their top bits, scatters each bucket back into x by the
// next bits so that sub-buckets hold about eight keys, and sorts those by
// comparison. The first pass fans out to at most 4096 buckets and the
// second works on a bucket that fits in the core's cache, so their writes
// stay cached where one pass into a million buckets would miss on almost
// every key. Skewed keys crowd some buckets, which then cost a comparison
// sort of their own size, never more than sorting x.
func Sort(x []uint64) {
	if len(x) < small {
		slices.Sort(x)
		return
	}
	SortBuf(x, make([]uint64, len(x)))
}

// SortBuf is Sort with buf, at least as long as x, as its scratch space:
// a caller that sorts many large slices reuses one.
func SortBuf(x, buf []uint64) {
	n := len(x)
	if n < small {
		slices.Sort(x)
		return
	}
	buf = buf[:n]
	// First digit: buckets of about 8K keys (64 KiB).
	b1 := uint(min(max(bits.Len(uint(n))-13, 4), 12))
	var ends [1 << 12]uint32
	scatter(x, buf, 0, b1, ends[:1<<b1])
	var sub [1 << 12]uint32
	start := uint32(0)
	for _, e := range ends[:1<<b1] {
		bucket, out := buf[start:e], x[start:e]
		start = e
		if len(bucket) <= 32 {
			copy(out, bucket)
			sortSmall(out)
			continue
		}
		// Second digit: the next bits, sub-buckets of about eight keys.
		b2 := uint(min(max(bits.Len(uint(len(bucket)))-3, 1), 12))
		ss := sub[:1<<b2]
		scatter(bucket, out, b1, b2, ss)
		from := uint32(0)
		for _, to := range ss {
			sortSmall(out[from:to])
			from = to
		}
	}
}

// scatter moves src into dst grouped by the b bits below the top skip
// bits, in order of those bits, and sets ends[d] to the end of group d in
// dst. len(ends) must be 1<<b.
func scatter(src, dst []uint64, skip, b uint, ends []uint32) {
	clear(ends)
	shift := 64 - skip - b
	mask := uint64(len(ends) - 1)
	for _, v := range src {
		ends[v>>shift&mask]++
	}
	pos := uint32(0)
	for i, c := range ends {
		ends[i] = pos // the group's start, until the scatter moves it to its end
		pos += c
	}
	for _, v := range src {
		d := v >> shift & mask
		dst[ends[d]] = v
		ends[d]++
	}
}

// sortSmall sorts a bucket: by insertion when it holds a few keys, the
// common case.
func sortSmall(x []uint64) {
	if len(x) > 32 {
		slices.Sort(x)
		return
	}
	for i := 1; i < len(x); i++ {
		v := x[i]
		j := i
		for ; j > 0 && x[j-1] > v; j-- {
			x[j] = x[j-1]
		}
		x[j] = v
	}
}

// SortPairs sorts keys in place and moves vals along; it is stable (equal
// keys keep the order of their vals).
func SortPairs[V any](keys []uint64, vals []V) {
	if len(keys) < 2 {
		return
	}
	kb, vb := make([]uint64, len(keys)), make([]V, len(vals))
	sk, sv, dk, dv := keys, vals, kb, vb
	for shift := uint(0); shift < 64; shift += 8 {
		count, skip := offsets(sk, shift)
		if skip {
			continue
		}
		for i, k := range sk {
			b := byte(k >> shift)
			dk[count[b]], dv[count[b]] = k, sv[i]
			count[b]++
		}
		sk, sv, dk, dv = dk, dv, sk, sv
	}
	if &sk[0] != &keys[0] {
		copy(keys, sk)
		copy(vals, sv)
	}
}

// offsets returns where each value of the byte at shift starts in the
// sorted output, and skip when every key shares that byte (the pass would
// not move anything).
func offsets(x []uint64, shift uint) (count [256]int, skip bool) {
	for _, v := range x {
		count[byte(v>>shift)]++
	}
	if count[byte(x[0]>>shift)] == len(x) {
		return count, true
	}
	pos := 0
	for i, c := range count {
		count[i] = pos
		pos += c
	}
	return count, false
}

// SortTop orders x by its top bits only (bits below them in no particular
// order), using buf (at least len(x)) as scratch: the passes over the low
// bytes are skipped, which is all grouping by a table's prefix needs.
func SortTop(x, buf []uint64, top int) {
	if top <= 0 || len(x) < 2 {
		return
	}
	if len(x) < small {
		slices.Sort(x)
		return
	}
	src, dst := x, buf[:len(x)]
	for shift := uint(64-top) &^ 7; shift < 64; shift += 8 {
		count, skip := offsets(src, shift)
		if skip {
			continue
		}
		for _, v := range src {
			b := byte(v >> shift)
			dst[count[b]] = v
			count[b]++
		}
		src, dst = dst, src
	}
	if &src[0] != &x[0] {
		copy(x, src)
	}
}
