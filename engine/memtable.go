package engine

import (
	"math/bits"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/simhashdb/simhashdb/permutation"
)

// memDoc is the latest write of an id in a memtable.
type memDoc struct {
	fp   uint64
	name string
	live bool // false: deleted
}

// memtable holds the writes since the last flush, searchable at once. For
// each table it hashes fingerprints by their top p_i permuted bits
// (prefixTable), so a probe is one hash look-up per table, as cheap as the
// on-disk probe's block search.
type memtable struct {
	design *permutation.Design
	docs   map[uint64]memDoc
	// byFP maps a fingerprint to the ids whose latest write here inserts it.
	// A key stays when its ids go: it marks the fingerprint as indexed.
	byFP    map[uint64][]uint64
	index   []prefixTable
	touched *roaring64.Bitmap // every id in docs: they hide older layers
	size    int64             // estimated bytes
	writes  uint64            // inserts and deletes applied: a version for caches
}

func newMemtable(d *permutation.Design) *memtable {
	m := &memtable{design: d, docs: map[uint64]memDoc{}, byFP: map[uint64][]uint64{},
		index: make([]prefixTable, len(d.Tables)), touched: roaring64.New()}
	for i := range m.index {
		m.index[i] = newPrefixTable(d.Tables[i].Prefix)
	}
	return m
}

// Estimated bytes of memory per document and per distinct fingerprint (map
// entries and slices, measured with runtime.MemStats on 1M inserts, rounded
// up), and per fingerprint in each table's prefixTable.
const (
	memDocCost   = 96
	memFPCost    = 64
	memTableCost = prefixSlotBytes
)

func (m *memtable) empty() bool { return len(m.docs) == 0 }

func (m *memtable) unlink(id uint64) {
	if prev, ok := m.docs[id]; ok && prev.live {
		ids := m.byFP[prev.fp]
		for i, x := range ids {
			if x == id {
				ids[i] = ids[len(ids)-1]
				m.byFP[prev.fp] = ids[:len(ids)-1]
				break
			}
		}
	}
}

func (m *memtable) insert(d Doc) {
	m.writes++
	m.unlink(d.ID)
	if _, ok := m.docs[d.ID]; !ok {
		m.size += memDocCost
	}
	m.docs[d.ID] = memDoc{fp: d.Fingerprint, name: d.Name, live: true}
	m.size += int64(len(d.Name))
	m.touched.Add(d.ID)
	ids, indexed := m.byFP[d.Fingerprint]
	if !indexed {
		m.size += memFPCost + int64(len(m.index))*memTableCost
		for t := range m.design.Tables {
			m.index[t].add(m.design.Tables[t].Permute(d.Fingerprint))
		}
	}
	m.byFP[d.Fingerprint] = append(ids, d.ID)
}

func (m *memtable) delete(id uint64) {
	m.writes++
	m.unlink(id)
	if _, ok := m.docs[id]; !ok {
		m.size += memDocCost
	}
	m.docs[id] = memDoc{}
	m.touched.Add(id)
}

// search calls fn for every fingerprint in the memtable within distance k
// of q (possibly more than once, and including fingerprints whose ids are
// gone).
func (m *memtable) search(q uint64, k int, fn func(fp uint64, d int)) {
	if len(m.byFP) == 0 { // every fingerprint indexed has a key there
		return
	}
	for t := range m.design.Tables {
		tb := &m.design.Tables[t]
		pq := tb.Permute(q)
		m.index[t].each(pq>>(64-tb.Prefix), func(v uint64) {
			if d := bits.OnesCount64(v ^ pq); d <= k {
				fn(tb.Unpermute(v), d)
			}
		})
	}
}
