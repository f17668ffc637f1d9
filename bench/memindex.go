package bench

import (
	"math/bits"
	"slices"

	"github.com/simhashdb/simhashdb/permutation"
)

// memIndex is the in-memory baseline: the approach of simhash-cpp and
// go-simstore, written here from the paper (their code is not reachable):
// one sorted []uint64 of permuted fingerprints per table, a binary search
// for the query's prefix and a scan of the run.
type memIndex struct {
	design *permutation.Design
	tables [][]uint64
}

func newMemIndex(d *permutation.Design, fps []uint64) *memIndex {
	m := &memIndex{design: d, tables: make([][]uint64, len(d.Tables))}
	for t := range d.Tables {
		tb := &d.Tables[t]
		perm := make([]uint64, len(fps))
		for i, v := range fps {
			perm[i] = tb.Permute(v)
		}
		slices.Sort(perm)
		m.tables[t] = slices.Compact(perm)
	}
	return m
}

// bytes is the memory of the tables.
func (m *memIndex) bytes() int64 {
	var n int64
	for _, t := range m.tables {
		n += int64(cap(t)) * 8
	}
	return n
}

// query returns the distinct fingerprints within k of q.
func (m *memIndex) query(q uint64, k int, out []uint64) []uint64 {
	out = out[:0]
	for t := range m.design.Tables {
		tb := &m.design.Tables[t]
		pq := tb.Permute(q)
		lo, hi := tb.Range(pq)
		tab := m.tables[t]
		i, _ := slices.BinarySearch(tab, lo)
		for ; i < len(tab) && tab[i] <= hi; i++ {
			if bits.OnesCount64(tab[i]^pq) <= k {
				out = append(out, tb.Unpermute(tab[i]))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}
