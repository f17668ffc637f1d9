// Package fingerprints generates the fingerprint sets of simhashdb's tests and
// benchmarks, deterministically from a seed, so that every run measures the
// same data and no download is needed.
package fingerprints

import (
	"math/bits"
	"math/rand/v2"
	"slices"
)

// Uniform returns n fingerprints drawn uniformly (duplicates are possible but
// vanishingly rare).
func Uniform(n int, seed uint64) []uint64 {
	r := rand.New(rand.NewPCG(seed, 1))
	x := make([]uint64, n)
	for i := range x {
		x[i] = r.Uint64()
	}
	return x
}

// Clustered returns n fingerprints shaped like a real simhash table (the
// paper's Figure 2a): centres with many close neighbours that differ in a few
// low bits, runs of consecutive values, a few bit flips anywhere, and the
// spikes 0 (empty documents) and 2^64-1, which repeat.
func Clustered(n int, seed uint64) []uint64 {
	r := rand.New(rand.NewPCG(seed, 2))
	x := make([]uint64, 0, n)
	for len(x) < n {
		switch c := r.Uint64(); r.IntN(8) {
		case 0: // the spikes
			x = append(x, 0, ^uint64(0))
		case 1: // near-duplicates anywhere: 1..3 flipped bits
			x = append(x, c)
			for range 1 + r.IntN(4) {
				x = append(x, Flip(c, 1+r.IntN(3), r))
			}
		default: // a dense neighbourhood: low-bit variants and a run
			for range 1 + r.IntN(50) {
				x = append(x, c^(r.Uint64()>>(40+r.IntN(24))))
			}
			for j := range uint64(r.IntN(5)) {
				x = append(x, c+j)
			}
		}
	}
	x = x[:n]
	r.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
	return x
}

// Flip returns fp with d distinct random bits flipped (distance d from fp).
func Flip(fp uint64, d int, r *rand.Rand) uint64 {
	var mask uint64
	for bits.OnesCount64(mask) < d {
		mask |= 1 << r.IntN(64)
	}
	return fp ^ mask
}

// Planted returns n fingerprints: uniform ones, of which a fraction frac
// (0..1) gain a neighbour at each distance 0..k (distance 0 is a duplicate
// fingerprint), and the fingerprints 0 and 2^64-1.
func Planted(n int, k int, frac float64, seed uint64) []uint64 {
	r := rand.New(rand.NewPCG(seed, 3))
	x := make([]uint64, 0, n)
	x = append(x, 0, ^uint64(0))
	for len(x) < n {
		c := r.Uint64()
		x = append(x, c)
		if r.Float64() < frac {
			for d := 0; d <= k; d++ {
				x = append(x, Flip(c, d, r))
			}
		}
	}
	x = x[:n]
	r.Shuffle(len(x), func(i, j int) { x[i], x[j] = x[j], x[i] })
	return x
}

// Sorted returns the distinct values of x in increasing order (x is reused).
func Sorted(x []uint64) []uint64 {
	slices.Sort(x)
	return slices.Compact(x)
}

// Queries returns n query fingerprints for stored: half within distance
// 0..3 of a stored fingerprint (cycling through the distances), half
// uniform random ones, the mix the benchmarks time.
func Queries(stored []uint64, n int, seed uint64) []uint64 {
	r := rand.New(rand.NewPCG(seed, 99))
	qs := make([]uint64, n)
	for i := range qs {
		if i%2 == 0 && len(stored) > 0 {
			qs[i] = Flip(stored[r.IntN(len(stored))], i/2%4, r)
		} else {
			qs[i] = r.Uint64()
		}
	}
	return qs
}
