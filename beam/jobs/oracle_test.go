package jobs

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"

	"github.com/simhashdb/simhashdb/internal/lines"
)

// dataset is a fixed-seed fingerprint collection of one shape.
type dataset struct {
	name string
	fps  []uint64
}

// flip returns v with d distinct random bits flipped.
func flip(rng *rand.Rand, v uint64, d int) uint64 {
	for _, b := range rng.Perm(64)[:d] {
		v ^= 1 << b
	}
	return v
}

func datasets() []dataset {
	rng := rand.New(rand.NewPCG(23, 2026))
	var uniform, clustered, planted, dups []uint64
	for range 3000 {
		uniform = append(uniform, rng.Uint64())
	}
	// Chains: each step within 1..3 bits of the last, so components
	// stretch beyond the distance and take several star rounds.
	for range 60 {
		v := rng.Uint64()
		for range 1 + rng.IntN(25) {
			clustered = append(clustered, v)
			v = flip(rng, v, 1+rng.IntN(3))
		}
	}
	for range 1000 {
		clustered = append(clustered, rng.Uint64())
	}
	// A neighbour at every distance 0..4 of each base.
	for range 300 {
		v := rng.Uint64()
		planted = append(planted, v)
		for d := range 5 {
			planted = append(planted, flip(rng, v, d))
		}
	}
	planted = append(planted, 0, 1, 3, 7, ^uint64(0), ^uint64(0)>>1, ^uint64(1))
	// Heavy duplicates: 10,000 copies of one fingerprint, fingerprint 0
	// and all-ones repeated, neighbours of each.
	hot := rng.Uint64()
	for range 10000 {
		dups = append(dups, hot)
	}
	for range 500 {
		dups = append(dups, 0, ^uint64(0))
	}
	dups = append(dups, flip(rng, hot, 1), flip(rng, hot, 3), 1, 1<<63, ^uint64(0)^5)
	for range 500 {
		v := rng.Uint64()
		dups = append(dups, v, v, flip(rng, v, 2))
	}
	shuffle := func(vs []uint64) []uint64 {
		rng.Shuffle(len(vs), func(i, j int) { vs[i], vs[j] = vs[j], vs[i] })
		return vs
	}
	return []dataset{
		{"uniform", shuffle(uniform)},
		{"clustered", shuffle(clustered)},
		{"planted", shuffle(planted)},
		{"duplicates", shuffle(dups)},
	}
}

// countValues returns the distinct values of fps, ascending, and how often
// each occurs.
func countValues(fps []uint64) ([]uint64, map[uint64]int) {
	count := map[uint64]int{}
	for _, v := range fps {
		count[v]++
	}
	distinct := make([]uint64, 0, len(count))
	for v := range count {
		distinct = append(distinct, v)
	}
	slices.Sort(distinct)
	return distinct, count
}

// oraclePairs returns find-all's lines by comparing every pair.
func oraclePairs(fps []uint64, k int) []string {
	distinct, count := countValues(fps)
	var out []string
	for i, a := range distinct {
		if count[a] > 1 {
			out = append(out, arrayLine(a, a))
		}
		for _, b := range distinct[i+1:] {
			if bits.OnesCount64(a^b) <= k {
				out = append(out, arrayLine(a, b))
			}
		}
	}
	slices.Sort(out)
	return out
}

// oracleClusters returns find-clusters' lines: the components of the
// brute-force graph, by a union-find of the test's own.
func oracleClusters(fps []uint64, k int) []string {
	distinct, count := countValues(fps)
	parent := make([]int, len(distinct))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	linked := make([]bool, len(distinct))
	for i, a := range distinct {
		for j := i + 1; j < len(distinct); j++ {
			if bits.OnesCount64(a^distinct[j]) <= k {
				parent[find(i)] = find(j)
				linked[i], linked[j] = true, true
			}
		}
	}
	groups := map[int][]uint64{}
	for i, v := range distinct {
		if !linked[i] && count[v] == 1 {
			continue
		}
		r := find(i)
		for range count[v] {
			groups[r] = append(groups[r], v)
		}
	}
	var out []string
	for _, g := range groups {
		slices.Sort(g)
		out = append(out, arrayLine(g...))
	}
	slices.Sort(out)
	return out
}

type doc struct {
	id   uint64
	fp   uint64
	name string
}

// oracleBatch returns batch's lines for queries (line numbers as qids)
// against docs.
func oracleBatch(queries []uint64, docs []doc, k int) []string {
	var out []string
	for i, q := range queries {
		a := lines.Answer{Query: fmt.Sprintf("0x%016x", q), QID: json.RawMessage(strconv.Itoa(i + 1)), Matches: []lines.Match{}}
		for _, d := range docs {
			if dist := bits.OnesCount64(q ^ d.fp); dist <= k {
				a.Matches = append(a.Matches, lines.NewMatch(d.id, d.name, d.fp, dist))
			}
		}
		slices.SortFunc(a.Matches, func(x, y lines.Match) int {
			return cmp.Or(cmp.Compare(x.Distance, y.Distance), cmp.Compare(x.ID, y.ID))
		})
		b, _ := json.Marshal(a)
		out = append(out, string(b))
	}
	slices.Sort(out)
	return out
}

func arrayLine(vs ...uint64) string {
	return strings.TrimSuffix(string(lines.AppendArray(nil, vs...)), "\n")
}

// oracleDuplicates returns the duplicate groups' lines.
func oracleDuplicates(fps []uint64) []string {
	distinct, count := countValues(fps)
	out := []string{}
	for _, v := range distinct {
		if count[v] > 1 {
			out = append(out, fmt.Sprintf(`{"fp":"0x%016x","count":%d}`, v, count[v]))
		}
	}
	slices.Sort(out)
	return out
}
