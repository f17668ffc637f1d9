// Package join finds every pair of 64-bit fingerprints within Hamming
// distance k: the self-join of the paper's batch mode (section 4). Each table
// of a permutation design sorts the permuted fingerprints by its top p bits;
// two fingerprints within distance k share those bits in at least one table,
// so only fingerprints in the same run need comparing.
//
// A pair that several tables bring together is reported once, by the first
// of them: the bits a table's prefix fixes are a mask in unpermuted space, and
// a pair belongs to table t when its XOR misses the masks of tables 0..t-1.
// No set of pairs seen is kept.
package join

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"runtime"
	"slices"
	"sync"

	"github.com/simhashdb/simhashdb/internal/radix"
	"github.com/simhashdb/simhashdb/permutation"
)

// ErrDistance reports a distance the design does not cover.
var ErrDistance = errors.New("join: distance beyond the design")

// Pair is two distinct fingerprints within the distance, A < B.
type Pair struct {
	A, B     uint64
	Distance int
}

// Finder finds pairs with one design at one distance.
type Finder struct {
	design *permutation.Design
	k      int
	masks  []uint64 // masks[t]: the unpermuted bit positions of table t's prefix
}

// New returns a Finder for pairs within distance k <= d.K.
func New(d *permutation.Design, k int) (*Finder, error) {
	if k < 0 || k > d.K {
		return nil, fmt.Errorf("%w: k = %d, the design covers 0..%d", ErrDistance, k, d.K)
	}
	f := &Finder{design: d, k: k, masks: make([]uint64, len(d.Tables))}
	for t := range d.Tables {
		tb := &d.Tables[t]
		f.masks[t] = tb.Unpermute(prefixMask(tb.Prefix))
	}
	return f, nil
}

// DesignFor returns the design that finds the pairs within k among n
// fingerprints fastest, by a cost model of Pairs: each table costs a
// scatter pass (about ten compares' worth per fingerprint) plus comparing
// each fingerprint with half its run, 2^(log2 n - p) / 2. Fewer, shorter
// prefixes win while runs stay small (4 tables of p = 16 at a million, 10 of
// p = 25 at a hundred million).
func DesignFor(k, n int) (*permutation.Design, error) {
	logN := math.Log2(float64(max(n, 2)))
	var best *permutation.Design
	bestCost := math.Inf(1)
	// Prefixes far from log2 n only cost more (and the optimiser is slow
	// to prove the longest ones).
	for p := max(1, int(logN)-8); p <= min(64, int(logN)+6); p++ {
		d, err := permutation.Optimize(k, p)
		if err != nil {
			continue
		}
		cost := 0.0
		for _, tb := range d.Tables {
			cost += 10 + math.Exp2(logN-float64(tb.Prefix))/2
		}
		if cost < bestCost {
			best, bestCost = d, cost
		}
	}
	if best == nil {
		return nil, fmt.Errorf("%w: k = %d", ErrDistance, k)
	}
	return best, nil
}

func prefixMask(p int) uint64 {
	if p == 0 {
		return 0
	}
	return ^uint64(0) << (64 - p)
}

// First returns the first table that brings together two fingerprints
// whose XOR is x (the one that reports their pair), or -1 if none does.
func (f *Finder) First(x uint64) int {
	for t, m := range f.masks {
		if x&m == 0 {
			return t
		}
	}
	return -1
}

// Scan reports the pairs of one table from its permuted fingerprints, fed
// in ascending order, distinct, in as many pieces as the caller likes (the
// blocks of a stored table, or one sorted slice).
type Scan struct {
	f     *Finder
	t     int
	shift uint
	run   []uint64 // the last piece's final run, which the next may extend
	emit  func(Pair) bool
	done  bool
}

// NewScan starts a scan of table t that hands every pair to emit; emit
// returns false to stop.
func (f *Finder) NewScan(t int, emit func(Pair) bool) *Scan {
	return &Scan{f: f, t: t, shift: uint(64 - f.design.Tables[t].Prefix), emit: emit}
}

// Feed scans the next piece of the table. It returns false once emit has
// asked to stop.
func (s *Scan) Feed(sorted []uint64) bool {
	if s.done || len(sorted) == 0 {
		return !s.done
	}
	i := 0
	if len(s.run) > 0 {
		// The carried run goes on while the piece starts with its prefix.
		p := s.run[0] >> s.shift
		for i < len(sorted) && sorted[i]>>s.shift == p {
			i++
		}
		s.run = append(s.run, sorted[:i]...)
		if i == len(sorted) {
			return true
		}
		if !s.group(s.run) {
			return false
		}
		s.run = s.run[:0]
	}
	for i < len(sorted) {
		p := sorted[i] >> s.shift
		j := i + 1
		for j < len(sorted) && sorted[j]>>s.shift == p {
			j++
		}
		if j == len(sorted) {
			s.run = append(s.run[:0], sorted[i:j]...)
			return true
		}
		if j-i > 1 && !s.group(sorted[i:j]) {
			return false
		}
		i = j
	}
	return true
}

// Close reports the pairs of the final run; it returns false if emit asked
// to stop.
func (s *Scan) Close() bool {
	if s.done {
		return false
	}
	ok := s.group(s.run)
	s.run = s.run[:0]
	return ok
}

// group compares every pair of a run that shares the table's prefix.
func (s *Scan) group(g []uint64) bool {
	tb := &s.f.design.Tables[s.t]
	for i, a := range g {
		for _, b := range g[i+1:] {
			if bits.OnesCount64(a^b) > s.f.k {
				continue
			}
			if p, ok := s.f.pair(s.t, tb.Unpermute(a), tb.Unpermute(b)); ok && !s.emit(p) {
				s.done = true
				return false
			}
		}
	}
	return true
}

// pair returns the pair of unpermuted a and b, which table t brings
// together, unless they are farther apart than k or an earlier table
// reports them.
func (f *Finder) pair(t int, a, b uint64) (Pair, bool) {
	x := a ^ b
	d := bits.OnesCount64(x)
	if d > f.k || f.First(x) != t {
		return Pair{}, false
	}
	if a > b {
		a, b = b, a
	}
	return Pair{a, b, d}, true
}

// Pairs returns every pair of the distinct values in distinct (see
// Distinct) within the Finder's distance, each once. The tables are built on
// up to workers goroutines (0: one per CPU), each holding one more copy of
// the values.
func (f *Finder) Pairs(ctx context.Context, distinct []uint64, workers int) ([]Pair, error) {
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, len(f.design.Tables))
	tables := make(chan int, len(f.design.Tables))
	for t := range f.design.Tables {
		tables <- t
	}
	close(tables)
	results := make([][]Pair, len(f.design.Tables))
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			work := make([]uint64, len(distinct))
			var scratch []uint64
			for t := range tables {
				if ctx.Err() != nil {
					return
				}
				var out []Pair
				f.table(t, distinct, work, &scratch, func(p Pair) { out = append(out, p) })
				results[t] = out
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var all []Pair
	for _, r := range results {
		all = append(all, r...)
	}
	return all, nil
}

// table reports the pairs of table t among fps (distinct) without
// permuting or sorting them: two fingerprints share the table's prefix when
// they agree on its mask, so scattering by a hash of the masked bits puts
// every run of the table in one small bucket (about 16 values), where
// comparing all pairs in cache beats sorting. The scatter goes in two
// passes, 256 ways over the whole input and then within each part, so that
// both write to few places at a time (one pass to 2^20 places misses the
// cache on every write and costs twice as much).
func (f *Finder) table(t int, fps, work []uint64, scratch *[]uint64, emit func(Pair)) {
	m := f.masks[t]
	nb := 8
	for nb < 24 && 1<<(nb+4) < len(fps) {
		nb++
	}
	top := scatter(fps, work, m, 0, 8)
	low := uint(nb - 8)
	for b := range 256 {
		part := work[top[b]:top[b+1]]
		if len(part) < 2 {
			continue
		}
		if cap(*scratch) < len(part) {
			*scratch = make([]uint64, len(part)*5/4)
		}
		sc := (*scratch)[:len(part)]
		counts := scatter(part, sc, m, 8, low)
		for c := range 1 << low {
			bucket := sc[counts[c]:counts[c+1]]
			if len(bucket) > 64 {
				// A crowded bucket (clustered data): sort it by the masked
				// bits so runs are contiguous, and compare within runs.
				slices.SortFunc(bucket, func(x, y uint64) int { return cmp.Compare(x&m, y&m) })
				for i := 0; i < len(bucket); {
					j := i + 1
					for j < len(bucket) && (bucket[j]^bucket[i])&m == 0 {
						j++
					}
					f.allPairs(t, bucket[i:j], emit)
					i = j
				}
				continue
			}
			f.allPairs(t, bucket, emit)
		}
	}
}

// scatter moves src into dst grouped by nb bits of the hash of their
// masked bits, from bit skip (counted from the top), and returns where each
// group starts, with len(src) at the end.
func scatter(src, dst []uint64, m uint64, skip, nb uint) []int {
	const mult = 0x9e3779b97f4a7c15 // Fibonacci hashing
	rshift := 64 - nb
	count := make([]int, 1<<nb+1)
	for _, v := range src {
		count[(v&m*mult)<<skip>>rshift+1]++
	}
	for i := 1; i < len(count); i++ {
		count[i] += count[i-1]
	}
	next := slices.Clone(count[:1<<nb])
	for _, v := range src {
		h := (v & m * mult) << skip >> rshift
		dst[next[h]] = v
		next[h]++
	}
	return count
}

// allPairs reports the pairs of g (unpermuted) that agree on table t's mask.
func (f *Finder) allPairs(t int, g []uint64, emit func(Pair)) {
	m := f.masks[t]
	for i, a := range g {
		for _, b := range g[i+1:] {
			if (a^b)&m != 0 {
				continue
			}
			if p, ok := f.pair(t, a, b); ok {
				emit(p)
			}
		}
	}
}

// Distinct sorts fps in place and returns its distinct values (in fps's
// memory) and how often each value that occurs more than once occurs.
func Distinct(fps []uint64) (distinct []uint64, repeated map[uint64]int) {
	radix.Sort(fps)
	repeated = map[uint64]int{}
	n := 0
	for i, v := range fps {
		if i > 0 && v == fps[n-1] {
			repeated[v] = max(repeated[v], 1) + 1
			continue
		}
		fps[n] = v
		n++
	}
	return fps[:n], repeated
}

// Components returns the connected components of the graph whose edges are
// pairs (union by size, path halving): each component's values ascending,
// the components by their smallest value. A pair whose A equals B makes a
// component of that value alone.
func Components(pairs []Pair) [][]uint64 {
	index := map[uint64]int{}
	var vals []uint64
	var parent, size []int
	node := func(v uint64) int {
		if i, ok := index[v]; ok {
			return i
		}
		index[v] = len(vals)
		vals = append(vals, v)
		parent = append(parent, len(parent))
		size = append(size, 1)
		return len(vals) - 1
	}
	find := func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for _, p := range pairs {
		a, b := find(node(p.A)), find(node(p.B))
		if a == b {
			continue
		}
		if size[a] < size[b] {
			a, b = b, a
		}
		parent[b] = a
		size[a] += size[b]
	}
	groups := map[int][]uint64{}
	for i, v := range vals {
		r := find(i)
		groups[r] = append(groups[r], v)
	}
	out := make([][]uint64, 0, len(groups))
	for _, g := range groups {
		slices.Sort(g)
		out = append(out, g)
	}
	slices.SortFunc(out, func(a, b []uint64) int { return cmp.Compare(a[0], b[0]) })
	return out
}

// Stars groups values by leader clustering over the graph whose edges are
// pairs: the values of order, in that order, each not yet taken, become a
// leader and take every neighbour not yet taken. Each star is its leader
// and then its members ascending, all within the pairs' distance of the
// leader (so within twice it of each other), unlike a component, which a
// chain can stretch without bound; the stars are in their leaders' order.
// A leader whose neighbours were all taken is a star of one. Values not in
// order are not leaders, nor members.
func Stars(pairs []Pair, order []uint64) [][]uint64 {
	adj := map[uint64][]uint64{}
	for _, p := range pairs {
		if p.A != p.B {
			adj[p.A] = append(adj[p.A], p.B)
			adj[p.B] = append(adj[p.B], p.A)
		}
	}
	known := make(map[uint64]bool, len(order))
	for _, v := range order {
		known[v] = true
	}
	taken := make(map[uint64]bool, len(order))
	var out [][]uint64
	for _, v := range order {
		if taken[v] {
			continue
		}
		taken[v] = true
		star := []uint64{v}
		for _, w := range adj[v] {
			if known[w] && !taken[w] {
				taken[w] = true
				star = append(star, w)
			}
		}
		slices.Sort(star[1:])
		out = append(out, star)
	}
	return out
}
