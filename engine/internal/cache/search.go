package cache

// Lower bounds by interpolation: entries of a block (and of a pending
// list) are spread evenly enough that a guess from the ends lands within a
// few entries, and the walk from there reads memory in order. Packed has
// the same two steps over its offsets (Guess, Walk).

// LowerBound returns the first i with fps[i] >= v in a sorted slice.
func LowerBound(fps []uint64, v uint64) int {
	if len(fps) == 0 {
		return 0
	}
	return walk(fps, v, interpolate(fps[0], fps[len(fps)-1], len(fps), v))
}

// interpolate is where v would be among n sorted values spread evenly
// from first to last, reading none of them: n when v is above last.
func interpolate(first, last uint64, n int, v uint64) int {
	if n == 0 || v <= first {
		return 0
	}
	if v > last {
		return n
	}
	step := (last-first)/uint64(n) + 1
	return min(int((v-first)/step), n-1)
}

// walk is LowerBound's second step: from guess i, the first i with fps[i]
// >= v. interpolate returns len(fps) when v is above the last entry, so
// below that the walk up stops within fps.
func walk(fps []uint64, v uint64, i int) int {
	if i == len(fps) {
		return i
	}
	for i > 0 && fps[i-1] >= v {
		i--
	}
	for fps[i] < v {
		i++
	}
	return i
}
