package spill

import "container/heap"

// Merger reads many runs as one: their records in (A, B) order, records
// of equal keys in the order of the runs given.
type Merger struct {
	h    mergeHeap
	run  int
	rec  Record
	err  error
	init bool
}

// NewMerger merges runs, none of which has been read yet.
func NewMerger(runs []*Reader) *Merger {
	return &Merger{h: mergeHeap{runs: runs}}
}

// Next moves to the next record of all the runs; false at their end or at
// the first error (Err).
func (m *Merger) Next() bool {
	if m.err != nil {
		return false
	}
	if !m.init {
		m.init = true
		for i, r := range m.h.runs {
			if !m.advance(i, r) {
				return false
			}
		}
		heap.Init(&m.h)
	} else if len(m.h.at) > 0 {
		// The run of the record last returned moves on.
		i := m.h.at[0]
		if r := m.h.runs[i]; r.Next() {
			heap.Fix(&m.h, 0)
		} else if m.err = r.Err(); m.err != nil {
			return false
		} else {
			heap.Pop(&m.h)
		}
	}
	if len(m.h.at) == 0 {
		return false
	}
	m.run = m.h.at[0]
	m.rec = m.h.runs[m.run].Record()
	return true
}

func (m *Merger) advance(i int, r *Reader) bool {
	if r.Next() {
		m.h.at = append(m.h.at, i)
		return true
	}
	m.err = r.Err()
	return m.err == nil
}

// Run is the index of the run the current record is from.
func (m *Merger) Run() int { return m.run }

// Record is the current record; its value is valid until the next Next.
func (m *Merger) Record() Record { return m.rec }

// Err is the first error a run gave.
func (m *Merger) Err() error { return m.err }

// mergeHeap orders the runs that have a record by that record.
type mergeHeap struct {
	runs []*Reader
	at   []int // runs with a current record, a heap
}

func (h *mergeHeap) Len() int { return len(h.at) }
func (h *mergeHeap) Less(i, j int) bool {
	a, b := &h.runs[h.at[i]].rec, &h.runs[h.at[j]].rec
	if a.A != b.A {
		return a.A < b.A
	}
	if a.B != b.B {
		return a.B < b.B
	}
	return h.at[i] < h.at[j]
}
func (h *mergeHeap) Swap(i, j int) { h.at[i], h.at[j] = h.at[j], h.at[i] }
func (h *mergeHeap) Push(x any)    { h.at = append(h.at, x.(int)) }
func (h *mergeHeap) Pop() any {
	x := h.at[len(h.at)-1]
	h.at = h.at[:len(h.at)-1]
	return x
}
