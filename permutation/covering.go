package permutation

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
)

// MaxCoveringBlocks bounds the blocks of Covering: its search enumerates
// every choice of r-k and of t blocks, and at 14 blocks takes up to a few
// tenths of a second.
const MaxCoveringBlocks = 14

// Covering returns a one-level design exact at k with fewer tables than
// Blocks: 64 bits in r near-equal blocks, each table's prefix t of them,
// where t <= r-k. A difference of k bits leaves at least r-k blocks clean;
// the tables' t-sets of blocks are chosen so that every r-k blocks contain
// one of them (a Turán system), so some table's prefix is clean. Blocks(k,
// r) is the case t = r-k, with every choice of blocks a table.
//
// For the same prefix width this takes far fewer tables than Blocks: at
// k = 5, 8 blocks of 8 bits with prefixes of two make 12 tables (two groups
// of four blocks, every pair within a group), where Blocks(5, 7) makes 21
// tables of 9-bit prefixes and Blocks(6, 8) 28 of 16 bits. The sets are
// found by a seeded greedy search, so the same arguments give the same
// design; among the smallest systems it finds, it keeps the one whose
// prefixes also avoid the most differences of k+1 bits (Finds).
func Covering(k, r, t int) (*Design, error) {
	if k < 0 || t < 1 || r > MaxCoveringBlocks || t > r-k {
		return nil, fmt.Errorf("%w: want 0 <= k, 1 <= t <= r-k, r <= %d, got k=%d r=%d t=%d", ErrInvalid, MaxCoveringBlocks, k, r, t)
	}
	sets := turanSystem(r, r-k, t)
	blocks := split(all64, r)
	d := &Design{K: k}
	for _, s := range sets {
		var lead, rest []bitRun
		for b := range blocks {
			if s&(1<<b) != 0 {
				lead = append(lead, blocks[b]...)
			} else {
				for _, x := range blocks[b] {
					rest = appendRun(rest, x)
				}
			}
		}
		d.Tables = append(d.Tables, newTable(append(segments(lead), segments(rest)...), width(lead)))
	}
	return d, nil
}

// subsets returns every m-subset of 0..n-1 as a bit set.
func subsets(n, m int) []uint32 {
	var out []uint32
	combinations(n, m, func(idx []int) {
		var s uint32
		for _, i := range idx {
			s |= 1 << i
		}
		out = append(out, s)
	})
	return out
}

// coveringTrials is how many randomised greedy searches turanSystem runs.
const coveringTrials = 64

// turanSystem returns a small family of t-subsets of r elements such that
// every l-subset contains one: greedy (the t-set in the most l-sets not yet
// covered, ties broken by a seeded generator), then each set dropped if the
// rest still cover, over coveringTrials runs. Of the smallest families it
// keeps the one contained in the most (l-1)-subsets.
func turanSystem(r, l, t int) []uint32 {
	big, cands := subsets(r, l), subsets(r, t)
	var small []uint32
	if l > t+1 {
		small = subsets(r, l-1)
	}
	// in[c] lists the l-sets candidate c lies in.
	in := make([][]int32, len(cands))
	for ci, c := range cands {
		for bi, b := range big {
			if c&b == c {
				in[ci] = append(in[ci], int32(bi))
			}
		}
	}
	rng := rand.New(rand.NewPCG(uint64(r)<<16|uint64(l)<<8|uint64(t), 0x7475726e))
	var best []uint32
	bestReach := -1
	covered := make([]int32, len(big)) // how many chosen sets each l-set holds
	gain := make([]int, len(cands))
	for range coveringTrials {
		clear(covered)
		left := len(big)
		var chosen []int
		for left > 0 {
			top, ties := -1, 0
			for ci := range cands {
				g := 0
				for _, bi := range in[ci] {
					if covered[bi] == 0 {
						g++
					}
				}
				gain[ci] = g
				switch {
				case g > top:
					top, ties = g, 1
				case g == top:
					ties++
				}
			}
			pick := rng.IntN(ties)
			for ci := range cands {
				if gain[ci] != top {
					continue
				}
				if pick == 0 {
					chosen = append(chosen, ci)
					for _, bi := range in[ci] {
						if covered[bi] == 0 {
							left--
						}
						covered[bi]++
					}
					break
				}
				pick--
			}
		}
		// Drop sets the others make redundant, latest first.
		for i := len(chosen) - 1; i >= 0; i-- {
			ci := chosen[i]
			needed := false
			for _, bi := range in[ci] {
				if covered[bi] == 1 {
					needed = true
					break
				}
			}
			if !needed {
				for _, bi := range in[ci] {
					covered[bi]--
				}
				chosen = slices.Delete(chosen, i, i+1)
			}
		}
		fam := make([]uint32, len(chosen))
		for i, ci := range chosen {
			fam[i] = cands[ci]
		}
		reach := 0
		for _, s := range small {
			for _, c := range fam {
				if c&s == c {
					reach++
					break
				}
			}
		}
		if best == nil || len(fam) < len(best) || len(fam) == len(best) && reach > bestReach {
			best, bestReach = fam, reach
		}
	}
	slices.SortFunc(best, func(a, b uint32) int {
		// Lexicographic by blocks, as combinations lists them: the set
		// holding the lowest block where they differ comes first.
		x := a ^ b
		if a&(x&-x) != 0 {
			return -1
		}
		return 1
	})
	return best
}

// findsSamples is how many random differences of a weight Finds tries.
const findsSamples = 20000

// Finds returns the share of w-bit differences (the XOR of a query and a
// stored fingerprint) that leave some table's prefix clean, so that a probe
// finds the fingerprint: 1 within ExactWithin; beyond, estimated on
// findsSamples seeded random differences.
func (d *Design) Finds(w int) float64 {
	if w <= d.ExactWithin() {
		return 1
	}
	if w > 64 {
		return 0 // no difference of 64 bits has so many
	}
	r := rand.New(rand.NewPCG(uint64(w), 0x66696e64))
	found := 0
	for range findsSamples {
		var e uint64
		for bits.OnesCount64(e) < w {
			e |= 1 << r.IntN(64)
		}
		if d.Covers(e) {
			found++
		}
	}
	return float64(found) / findsSamples
}

// MinCandidateFinds is the least share of k-bit differences a design of
// ForCandidates exact within k-1 finds.
const MinCandidateFinds = 0.9

// ForCandidates returns the design of an index of about n fingerprints
// whose queries propose candidates within k that something else verifies
// (a text index's sketches): ForIndex(k, n)'s, exact within k, unless
// Covering(k-1, k+2, 2)'s takes fewer tables with prefixes as long and
// finds at least MinCandidateFinds of the fingerprints at k (Finds); then
// that one, asked for k, exact within k-1. At k = 6 and 2^17 fingerprints
// or more, ForIndex splits 64 bits in 8 blocks and prefixes every pair of
// them (28 tables); Covering(5, 8, 2) prefixes the pairs within two halves
// of four (12 tables), which find every fingerprint within 5 bits and 94%
// at 6. Below k = 6 the halves find fewer than MinCandidateFinds at k.
func ForCandidates(k, n int) (*Design, error) {
	d, err := ForIndex(k, n)
	if err != nil || k < 1 || k+2 > MaxCoveringBlocks {
		return d, err
	}
	c, err := Covering(k-1, k+2, 2)
	if err != nil || len(c.Tables) >= len(d.Tables) || c.MinPrefix() < d.MinPrefix() {
		return d, err
	}
	c.K, c.Exact = k, k-1
	if c.Finds(k) < MinCandidateFinds {
		return d, nil
	}
	return c, nil
}
