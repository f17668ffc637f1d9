// Package memtable holds an index's writes since its last flush,
// searchable at once: the latest write of each id, and for each table of
// the design the fingerprints by their top permuted bits (prefixTable), so
// that a probe is one hash look-up per table. A Memtable is not safe for
// concurrent use: its owner writes it under a lock, and once frozen (no
// write any more) anyone may read it.
package memtable

import (
	"iter"
	"maps"
	"math/bits"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/simhashdb/simhashdb/permutation"
)

// Doc is the latest write of an id in a memtable.
type Doc struct {
	FP   uint64
	Name string
	Live bool // false: deleted
}

// Memtable holds writes since the last flush.
type Memtable struct {
	design *permutation.Design
	docs   map[uint64]Doc
	// byFP maps a fingerprint to the ids whose latest write here inserts it.
	// A key stays when its ids go: it marks the fingerprint as indexed.
	byFP    map[uint64][]uint64
	index   []prefixTable
	touched *roaring64.Bitmap // every id in docs: they hide older layers
	size    int64             // estimated bytes
	writes  uint64            // inserts and deletes applied: a version for caches
	// position is that of the last commit applied here that had one
	// (engine.Commit.Position), 0 if none did.
	position uint64
}

// New returns an empty memtable for the tables of d.
func New(d *permutation.Design) *Memtable {
	m := &Memtable{design: d, docs: map[uint64]Doc{}, byFP: map[uint64][]uint64{},
		index: make([]prefixTable, len(d.Tables)), touched: roaring64.New()}
	for i := range m.index {
		m.index[i] = newPrefixTable(d.Tables[i].Prefix)
	}
	return m
}

// Estimated bytes of memory per document and per distinct fingerprint (map
// entries and slices, rounded up), and per fingerprint in each table's
// prefixTable.
const (
	docCost   = 96
	fpCost    = 64
	tableCost = prefixSlotBytes
)

// WriteCost is the most a commit of docs documents with nameBytes of
// names, and of deletes deletions, adds to the Size of a memtable of
// tables tables: what a writer waits for room for.
func WriteCost(tables, docs int, nameBytes int64, deletes int) int64 {
	return int64(docs)*(docCost+fpCost+int64(tables)*tableCost) + nameBytes + int64(deletes)*docCost
}

// Empty reports whether m holds no write.
func (m *Memtable) Empty() bool { return len(m.docs) == 0 && m.position == 0 }

// SetPosition notes that the commits applied so far end at position p.
func (m *Memtable) SetPosition(p uint64) { m.position = p }

// Position is the position of the last commit applied here that had one,
// or 0.
func (m *Memtable) Position() uint64 { return m.position }

// Len is the number of ids m holds a write of.
func (m *Memtable) Len() int { return len(m.docs) }

// Size is m's estimated memory in bytes.
func (m *Memtable) Size() int64 { return m.size }

// Writes counts the inserts and deletes applied: a version for caches.
func (m *Memtable) Writes() uint64 { return m.writes }

func (m *Memtable) unlink(id uint64) {
	if prev, ok := m.docs[id]; ok && prev.Live {
		ids := m.byFP[prev.FP]
		for i, x := range ids {
			if x == id {
				ids[i] = ids[len(ids)-1]
				m.byFP[prev.FP] = ids[:len(ids)-1]
				break
			}
		}
	}
}

// Insert writes document id with fingerprint fp and name.
func (m *Memtable) Insert(id, fp uint64, name string) {
	m.writes++
	m.unlink(id)
	if _, ok := m.docs[id]; !ok {
		m.size += docCost
	}
	m.docs[id] = Doc{FP: fp, Name: name, Live: true}
	m.size += int64(len(name))
	m.touched.Add(id)
	ids, indexed := m.byFP[fp]
	if !indexed {
		m.size += fpCost + int64(len(m.index))*tableCost
		for t := range m.design.Tables {
			m.index[t].add(m.design.Tables[t].Permute(fp))
		}
	}
	m.byFP[fp] = append(ids, id)
}

// Delete writes the deletion of id.
func (m *Memtable) Delete(id uint64) {
	m.writes++
	m.unlink(id)
	if _, ok := m.docs[id]; !ok {
		m.size += docCost
	}
	m.docs[id] = Doc{}
	m.touched.Add(id)
}

// Get returns the latest write of id in m, if any.
func (m *Memtable) Get(id uint64) (Doc, bool) {
	d, ok := m.docs[id]
	return d, ok
}

// Touched reports whether m holds a write of id (which hides any older one).
func (m *Memtable) Touched(id uint64) bool { return m.touched.Contains(id) }

// MinTouched returns the least id m holds a write of; m holds one (Len).
func (m *Memtable) MinTouched() uint64 { return m.touched.Minimum() }

// IDs returns the ids whose latest write in m inserts fp; the caller does
// not change the slice.
func (m *Memtable) IDs(fp uint64) []uint64 { return m.byFP[fp] }

// Docs returns every write in m, by id, in no order.
func (m *Memtable) Docs() iter.Seq2[uint64, Doc] { return maps.All(m.docs) }

// Fingerprints returns every fingerprint m has indexed, with the ids whose
// latest write inserts it: none when every document that had it was
// written again, which a flush checks against what is stored.
func (m *Memtable) Fingerprints() iter.Seq2[uint64, []uint64] { return maps.All(m.byFP) }

// Search calls fn for every fingerprint in m within distance k of q
// (possibly more than once, and including fingerprints whose ids are
// gone).
func (m *Memtable) Search(q uint64, k int, fn func(fp uint64, d int)) {
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
