package permutation

import (
	"fmt"
	"math"
	"slices"
)

// bitRun is a contiguous run of original bit positions, listed from the
// most significant down: hi, hi-1, ..., hi-n+1.
type bitRun struct{ hi, n int }

// split divides bits (a list of runs, most significant first) into r blocks
// of near-equal width, wider blocks first as in the paper (11,11,11,11,10,10).
func split(bits []bitRun, r int) [][]bitRun {
	total := 0
	for _, b := range bits {
		total += b.n
	}
	blocks := make([][]bitRun, r)
	i, off := 0, 0 // position in bits
	for j := range r {
		w := total / r
		if j < total%r {
			w++
		}
		for w > 0 {
			take := min(w, bits[i].n-off)
			blocks[j] = appendRun(blocks[j], bitRun{bits[i].hi - off, take})
			w -= take
			off += take
			if off == bits[i].n {
				i, off = i+1, 0
			}
		}
	}
	return blocks
}

func appendRun(rs []bitRun, r bitRun) []bitRun {
	if n := len(rs); n > 0 && rs[n-1].hi-rs[n-1].n == r.hi {
		rs[n-1].n += r.n
		return rs
	}
	return append(rs, r)
}

func width(rs []bitRun) int {
	w := 0
	for _, r := range rs {
		w += r.n
	}
	return w
}

func segments(rs []bitRun) []Segment {
	var out []Segment
	for _, r := range rs {
		out = append(out, Segment{Shift: uint8(r.hi - r.n + 1), Width: uint8(r.n)})
	}
	return out
}

// combinations calls f with every m-subset of 0..n-1, in lexicographic order.
func combinations(n, m int, f func(idx []int)) {
	idx := make([]int, m)
	for i := range idx {
		idx[i] = i
	}
	for {
		f(idx)
		i := m - 1
		for i >= 0 && idx[i] == n-m+i {
			i--
		}
		if i < 0 {
			return
		}
		idx[i]++
		for j := i + 1; j < m; j++ {
			idx[j] = idx[j-1] + 1
		}
	}
}

var all64 = []bitRun{{63, 64}}

// expand makes the tables of one level: bits split into r blocks, every
// choice of r-k leading blocks; next builds the rest of each table from the
// bits not chosen (nil: they follow in their original order).
func expand(k int, bits []bitRun, r int, fixed []bitRun, next func(fixed, rest []bitRun) []Table) []Table {
	blocks := split(bits, r)
	var out []Table
	combinations(r, r-k, func(idx []int) {
		lead := slices.Clone(fixed)
		var rest []bitRun
		j := 0
		for b := range blocks {
			if j < len(idx) && idx[j] == b {
				lead = append(lead, blocks[b]...)
				j++
			} else {
				for _, x := range blocks[b] {
					rest = appendRun(rest, x)
				}
			}
		}
		if next == nil {
			segs := append(segments(lead), segments(rest)...)
			out = append(out, newTable(segs, width(lead)))
			return
		}
		out = append(out, next(lead, rest)...)
	})
	return out
}

// Blocks returns the one-level design: 64 bits in r near-equal blocks, one
// table per choice of r-k leading blocks (C(r, k) tables).
func Blocks(k, r int) (*Design, error) {
	if k < 0 || r <= k || r > 64 {
		return nil, fmt.Errorf("%w: want 0 <= k < r <= 64, got k=%d r=%d", ErrInvalid, k, r)
	}
	return &Design{K: k, Tables: expand(k, all64, r, nil, nil)}, nil
}

// TwoLevel returns the paper's two-level design: r1 blocks choose r1-k, then
// the bits of the k blocks left over split into r2 blocks choose r2-k, for
// C(r1,k) x C(r2,k) tables. TwoLevel(3, 4, 4) is the paper's 16 tables with
// p = 28.
func TwoLevel(k, r1, r2 int) (*Design, error) {
	if k < 0 || r1 <= k || r2 <= k || r1 > 64 {
		return nil, fmt.Errorf("%w: want k < r1, k < r2, got k=%d r1=%d r2=%d", ErrInvalid, k, r1, r2)
	}
	rest := 64 - (64/r1)*(r1-k) // upper bound of the leftover bits
	if r2 > rest {
		return nil, fmt.Errorf("%w: r2=%d blocks do not fit the %d bits left after the first level", ErrInvalid, r2, rest)
	}
	return &Design{K: k, Tables: expand(k, all64, r1, nil, func(fixed, rest []bitRun) []Table {
		return expand(k, rest, r2, fixed, nil)
	})}, nil
}

// Paper returns one of the four designs of the paper's Example 3.1 (k = 3)
// by its number of tables: 20, 16, 10 or 4.
func Paper(tables int) (*Design, error) {
	switch tables {
	case 20:
		return Blocks(3, 6)
	case 16:
		return TwoLevel(3, 4, 4)
	case 10:
		return Blocks(3, 5)
	case 4:
		return Blocks(3, 4)
	}
	return nil, fmt.Errorf("%w: the paper's Example 3.1 has designs of 20, 16, 10 and 4 tables, not %d", ErrInvalid, tables)
}

// MaxLevels bounds the recursion of Optimize.
const MaxLevels = 4

// Optimize returns the design with the fewest tables whose every p_i is at
// least pMin, by the recursion X(f, k, d) of the paper's section 3.1.2: split
// the f free bits into r > k blocks, fix r-k of them as leading bits, and
// recurse on the rest until pMin bits are fixed. For 2^d stored
// fingerprints, pMin = d - c makes a probe return about 2^c candidates.
func Optimize(k, pMin int) (*Design, error) {
	if k < 0 || k >= 64 {
		return nil, fmt.Errorf("%w: k=%d outside 0..63", ErrInvalid, k)
	}
	if pMin < 0 || pMin > 64-k {
		return nil, fmt.Errorf("%w: pMin=%d: a table can fix at most 64-k = %d bits", ErrInvalid, pMin, 64-k)
	}
	o := optimizer{k: k, pMin: pMin, memo: map[[3]int]plan{}}
	p := o.best(64, 0, 0)
	if math.IsInf(p.tables, 1) {
		return nil, fmt.Errorf("%w: no design of at most %d levels fixes %d bits for k=%d", ErrInvalid, MaxLevels, pMin, k)
	}
	var build func(bits []bitRun, fixed []bitRun, level int) []Table
	build = func(bits []bitRun, fixed []bitRun, level int) []Table {
		if width(fixed) >= pMin {
			return []Table{newTable(append(segments(fixed), segments(bits)...), width(fixed))}
		}
		r := o.best(width(bits), width(fixed), level).r
		return expand(k, bits, r, fixed, func(f, rest []bitRun) []Table { return build(rest, f, level+1) })
	}
	return &Design{K: k, Tables: build(all64, nil, 0)}, nil
}

// OptimizeMaxTables returns the design of at most maxTables tables with the
// largest smallest p_i (the fastest probes that space allows).
func OptimizeMaxTables(k, maxTables int) (*Design, error) {
	for p := 64 - k; p >= 0; p-- {
		d, err := Optimize(k, p)
		if err == nil && len(d.Tables) <= maxTables {
			return d, nil
		}
	}
	return nil, fmt.Errorf("%w: no design for k=%d within %d tables", ErrInvalid, k, maxTables)
}

type plan struct {
	tables float64
	r      int
}

type optimizer struct {
	k, pMin int
	memo    map[[3]int]plan
}

// best returns the fewest tables that fix pMin bits given free bits and
// fixed bits already fixed, and the r of the first split.
func (o *optimizer) best(free, fixed, level int) plan {
	if fixed >= o.pMin {
		return plan{tables: 1}
	}
	if level >= MaxLevels || free <= o.k {
		return plan{tables: math.Inf(1)}
	}
	key := [3]int{free, fixed, level}
	if p, ok := o.memo[key]; ok {
		return p
	}
	res := plan{tables: math.Inf(1)}
	for r := o.k + 1; r <= free; r++ {
		c := binom(r, o.k)
		if c >= res.tables {
			break // C(r, k) grows with r
		}
		// Blocks are wide (w+1 bits) or narrow (w bits); a choice of r-k
		// leading blocks with j wide ones fixes (r-k)w + j bits.
		w, wide := free/r, free%r
		total := 0.0
		for j := max(0, (r-o.k)-(r-wide)); j <= min(wide, r-o.k); j++ {
			ways := binom(wide, j) * binom(r-wide, r-o.k-j)
			lead := (r-o.k)*w + j
			sub := o.best(free-lead, fixed+lead, level+1)
			total += ways * sub.tables
		}
		if total < res.tables {
			res = plan{tables: total, r: r}
		}
	}
	o.memo[key] = res
	return res
}

func binom(n, k int) float64 {
	if k < 0 || k > n {
		return 0
	}
	r := 1.0
	for i := range k {
		r = r * float64(n-i) / float64(i+1)
	}
	return math.Round(r)
}

// ForIndex returns the design of an index of about n fingerprints at
// distance k: the optimiser's with every prefix at least log2 n - 3 bits,
// so that a probe expects at most about eight candidates a table, with the
// prefix shortened until the design has at most 64 tables (past that, space
// grows faster than probes get cheaper), else Blocks(k, k+1).
//
// Eight, not one: a probe reads a block of a few hundred entries whatever
// its range, so a few more candidates cost a few compares in a cache line
// already read, while a longer prefix can cost a whole level of tables
// (at k = 3 and 100M fingerprints, 16 tables instead of 10).
func ForIndex(k, n int) (*Design, error) {
	p := int(math.Ceil(math.Log2(float64(max(n, 2))))) - candidateBits
	for ; p > 1; p-- {
		d, err := Optimize(k, p)
		if err == nil && len(d.Tables) <= maxIndexTables {
			return d, nil
		}
	}
	return Blocks(k, k+1)
}

// ForDisk returns the design of an index of about n fingerprints at
// distance k whose tables are much larger than its cache, so that every
// probe reads the disk: of the optimiser's designs of at most 64 tables
// (and Blocks(k, k+1)), the one whose queries read the fewest pages
// (PagesPerQuery), the one of fewer tables on a tie. A read costs what
// tens of thousands of candidates do, so ForDisk spends candidates to save
// tables: at k = 3 it keeps 4 tables where ForIndex keeps 10, up to
// about 82M fingerprints (2^26.3), and ForIndex's design just above. It
// searches distances up to MaxDiskK: beyond, the optimiser's search at
// every prefix takes minutes, and ForDisk returns an error rather than keep
// its caller waiting.
func ForDisk(k, n int) (*Design, error) {
	if k > MaxDiskK {
		return nil, fmt.Errorf("permutation: a disk design is searched for distances up to %d, not %d", MaxDiskK, k)
	}
	logN := math.Log2(float64(max(n, 2)))
	best, err := Blocks(k, k+1)
	if err != nil {
		return nil, err
	}
	cost := best.PagesPerQuery(logN)
	for p := 64 - k; p > 1; p-- {
		d, err := Optimize(k, p)
		if err != nil || len(d.Tables) > maxIndexTables {
			continue
		}
		if c := d.PagesPerQuery(logN); c < cost || c == cost && len(d.Tables) < len(best.Tables) {
			best, cost = d, c
		}
	}
	return best, nil
}

// candidateBits is log2 of the candidates a table's probe may expect.
const candidateBits = 3

const maxIndexTables = 64

// MaxDiskK is the largest distance ForDisk searches a design for.
const MaxDiskK = 4
