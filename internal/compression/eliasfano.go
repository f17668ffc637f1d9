package compression

import "math/bits"

// EliasFanoBits is the size in bits of sorted, distinct fps in plain
// Elias-Fano over the universe 2^64: each value's low l bits as they are,
// l = floor(log2(2^64 / n)), and its high bits in unary, n ones and a zero
// per bucket up to the last value's. No select index is counted.
func EliasFanoBits(fps []uint64) int64 {
	n := len(fps)
	if n == 0 {
		return 0
	}
	return efBits(n, fps[n-1], lowBits(^uint64(0), n))
}

// PartitionedEliasFanoBits is the size in bits of sorted, distinct fps in
// partitioned Elias-Fano: cut into partitions, each kept the cheapest way
// of Elias-Fano over its own range (from the previous partition's last
// value), a bitmap of that range, or no bits when it fills its range; then
// the partitions' last values and bit offsets, each in plain Elias-Fano.
// The cuts are chosen by dynamic programming over partition lengths that
// are powers of two up to maxPart, each partition charged partCost bits
// for its two upper entries (Ottaviano and Venturini's optimal cuts allow
// any length; on clustered sets these come close, and on uniform ones
// every cut costs about the same).
func PartitionedEliasFanoBits(fps []uint64) int64 {
	n := len(fps)
	if n == 0 {
		return 0
	}
	// best[j]: the cheapest cost of fps[:j]; from[j]: where its last
	// partition starts.
	best := make([]int64, n+1)
	from := make([]int32, n+1)
	for j := 1; j <= n; j++ {
		best[j] = -1
		for l := 1; l <= maxPart && l <= j; l *= 2 {
			c := best[j-l] + partBits(fps, j-l, j) + partCost
			if best[j] < 0 || c < best[j] {
				best[j], from[j] = c, int32(j-l)
			}
		}
	}
	var cuts []int
	for j := n; j > 0; j = int(from[j]) {
		cuts = append(cuts, j)
	}
	var total int64
	lasts := make([]uint64, 0, len(cuts))
	offsets := make([]uint64, 0, len(cuts))
	i := 0
	for k := len(cuts) - 1; k >= 0; k-- {
		j := cuts[k]
		total += partBits(fps, i, j)
		lasts = append(lasts, fps[j-1])
		offsets = append(offsets, uint64(total))
		i = j
	}
	total += efBits(len(lasts), lasts[len(lasts)-1], lowBits(^uint64(0), len(lasts)))
	total += efBits(len(offsets), offsets[len(offsets)-1], lowBits(offsets[len(offsets)-1], len(offsets)))
	return total
}

// Partitions of PartitionedEliasFanoBits: the longest, and the bits a
// partition's entries in the upper sequences take, about.
const (
	maxPart  = 1 << 12
	partCost = 64
)

// partBits is the size of the partition fps[i:j]: the cheapest of
// Elias-Fano and a bitmap over its range, none if it fills it.
func partBits(fps []uint64, i, j int) int64 {
	base := uint64(0)
	if i > 0 {
		base = fps[i-1] + 1
	}
	m, span := j-i, fps[j-1]-base // the values lie in base..base+span
	if span == uint64(m-1) {
		return 0
	}
	ef := efBits(m, span, lowBits(span, m))
	if span < uint64(ef) {
		return int64(span) + 1
	}
	return ef
}

// lowBits is Elias-Fano's l for n >= 1 values of 0..top: the largest l
// with n * 2^l <= top+1 (top+1 may be 2^64).
func lowBits(top uint64, n int) int {
	l := 0
	for l < 63 && fits(uint64(n), l+1, top) {
		l++
	}
	return l
}

// fits reports whether n * 2^l <= top+1.
func fits(n uint64, l int, top uint64) bool {
	hi, lo := bits.Mul64(n, 1<<l)
	switch hi {
	case 0:
		return lo-1 <= top
	case 1:
		return lo == 0 && top == ^uint64(0)
	}
	return false
}

// efBits is the size of n values of 0..last (last the largest) with l low
// bits each.
func efBits(n int, last uint64, l int) int64 {
	return int64(n)*int64(l) + int64(n) + int64(last>>l) + 1
}
