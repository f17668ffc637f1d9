package simhash

import "math"

// laneMask selects bit 0 of every byte of a word: the SWAR counters below keep
// eight 8-bit counters per word, one per byte lane.
const laneMask = 0x0101010101010101

// Vector is the vector V of Charikar's simhash: 64 signed counters, one per bit
// of the fingerprint. Adding a feature adds its weight to counter i when bit i
// of the feature's hash is 1 and subtracts it when the bit is 0.
//
// Unit-weight features (the default term-frequency weighting, where every
// occurrence counts once) take a fast path: their 1-bits are counted in byte
// lanes, eight adds per feature instead of 64, and spilled to wide counters
// every 255 features. The zero Vector is empty and ready to use.
type Vector struct {
	lanes  [8]uint64 // byte-lane counts of 1-bits of unit features not yet spilled
	inLane int       // unit features counted in lanes since the last spill
	units  int64     // unit features added in all
	ones   [64]int64 // spilled 1-bit counts of unit features
	v      [64]int64 // weighted features' signed sums, fixed point (weightOne = 1)
	weight bool      // any weighted feature added
}

// AddUnit adds a feature of weight 1.
func (a *Vector) AddUnit(h uint64) {
	a.lanes[0] += h & laneMask
	a.lanes[1] += (h >> 1) & laneMask
	a.lanes[2] += (h >> 2) & laneMask
	a.lanes[3] += (h >> 3) & laneMask
	a.lanes[4] += (h >> 4) & laneMask
	a.lanes[5] += (h >> 5) & laneMask
	a.lanes[6] += (h >> 6) & laneMask
	a.lanes[7] += (h >> 7) & laneMask
	a.units++
	a.inLane++
	if a.inLane == 255 {
		a.spill()
	}
}

// spill moves the byte-lane counts into the wide counters before a lane can
// overflow.
func (a *Vector) spill() {
	for j := range 8 {
		w := a.lanes[j]
		for b := range 8 {
			a.ones[8*b+j] += int64((w >> (8 * b)) & 0xff)
		}
		a.lanes[j] = 0
	}
	a.inLane = 0
}

// weightOne is 1.0 in the fixed-point weights of Add. Integer sums do not
// depend on the order of the additions, so a fingerprint is the same however
// a map of features is iterated; float sums are not.
const weightOne = 1 << 16

// maxWeight bounds a weight so that 2^31 such features cannot overflow.
const maxWeight = 1 << 15

// Add adds a feature with weight w. Weights are rounded to multiples of
// 2^-16 and capped at 2^15 in magnitude; zero, NaN and infinite weights are
// ignored.
func (a *Vector) Add(h uint64, w float64) {
	if w == 0 || math.IsNaN(w) || math.IsInf(w, 0) {
		return
	}
	w = max(-maxWeight, min(maxWeight, w))
	fw := int64(math.Round(w * weightOne))
	if fw == 0 {
		return
	}
	a.weight = true
	for i := range 64 {
		if h&(1<<i) != 0 {
			a.v[i] += fw
		} else {
			a.v[i] -= fw
		}
	}
}

// Sum returns the fingerprint: bit i is 1 when counter i is greater than zero
// (or, with tiesToOne, greater than or equal to zero). An empty Vector gives 0
// with the default rule, so every empty document has fingerprint 0, as the
// paper's empty pages do.
func (a *Vector) Sum(tiesToOne bool) uint64 {
	return a.sumWith(nil, 0, tiesToOne)
}

// sumWith is Sum of a plus the unit features of b, each weighing w (rounded
// as Add rounds it): for weights known only once a document is read.
func (a *Vector) sumWith(b *Vector, w float64, tiesToOne bool) uint64 {
	var bc [64]int64
	if b != nil && b.units > 0 {
		fw := int64(math.Round(max(-maxWeight, min(maxWeight, w)) * weightOne))
		b.spillAll()
		for i := range 64 {
			bc[i] = (2*b.ones[i] - b.units) * fw
		}
	}
	a.spillAll()
	var fp uint64
	for i := range 64 {
		c := (2*a.ones[i]-a.units)*weightOne + bc[i]
		if a.weight {
			c += a.v[i]
		}
		if c > 0 || (tiesToOne && c == 0) {
			fp |= 1 << i
		}
	}
	return fp
}

// spillAll moves the lanes' counts into ones.
func (a *Vector) spillAll() {
	if a.inLane > 0 {
		a.spill()
	}
}

// Reset empties the Vector.
func (a *Vector) Reset() { *a = Vector{} }
