package spill

import (
	"slices"

	"github.com/simhashdb/simhashdb/internal/radix"
)

// Part is documents held in memory, in columns: ids, fingerprints and
// names in one byte slice, nothing for the collector to scan and 20 bytes
// a document besides its name. A part holds less than 4 GiB of names.
type Part struct {
	IDs, FPs []uint64
	// ends says where each document's name ends in names; nil while no
	// document has a name.
	ends  []uint32
	names []byte
}

// Add appends a document; its name is prefix and name, one after the
// other (a sketch and a name).
func (p *Part) Add(id, fp uint64, prefix, name string) {
	p.IDs = append(p.IDs, id)
	p.FPs = append(p.FPs, fp)
	if p.ends == nil && len(prefix)+len(name) == 0 {
		return
	}
	if p.ends == nil {
		p.ends = make([]uint32, len(p.IDs)-1, cap(p.IDs))
	}
	p.names = append(append(p.names, prefix...), name...)
	p.ends = append(p.ends, uint32(len(p.names)))
}

// Len is how many documents the part holds.
func (p *Part) Len() int { return len(p.IDs) }

// Memory is about the bytes the part holds.
func (p *Part) Memory() int64 { return int64(len(p.IDs))*20 + int64(len(p.names)) }

// NameBytes is the bytes of all the part's names.
func (p *Part) NameBytes() int { return len(p.names) }

// Name is document i's name.
func (p *Part) Name(i int) []byte {
	if p.ends == nil {
		return nil
	}
	from := uint32(0)
	if i > 0 {
		from = p.ends[i-1]
	}
	return p.names[from:p.ends[i]]
}

// Named says whether a document of the part has a name.
func (p *Part) Named() bool { return p.ends != nil }

// Reset empties the part, keeping its memory.
func (p *Part) Reset() {
	p.IDs, p.FPs, p.ends, p.names = p.IDs[:0], p.FPs[:0], nil, p.names[:0]
}

// SortByID orders the part by id, keeping of a repeated id the last
// document alone. A part already in strictly increasing id order (the
// usual bulk case) is left as it is.
func (p *Part) SortByID() {
	if strictly(p.IDs) {
		return
	}
	keys := slices.Clone(p.IDs)
	order := make([]uint32, len(keys))
	for i := range order {
		order[i] = uint32(i)
	}
	radix.SortPairs(keys, order) // stable: a repeated id's documents in their order
	w := 0
	for i := range order {
		if i+1 < len(keys) && keys[i+1] == keys[i] {
			continue
		}
		order[w] = order[i]
		w++
	}
	p.permute(order[:w])
}

func strictly(ids []uint64) bool {
	for i := 1; i < len(ids); i++ {
		if ids[i] <= ids[i-1] {
			return false
		}
	}
	return true
}

// ByPosting is the part's postings in order, (fingerprint, id): keys and
// ids, and for a part with names the index of each posting's document
// (order). The part must be in id order.
func (p *Part) ByPosting() (keys, ids []uint64, order []uint32) {
	keys = slices.Clone(p.FPs)
	// Stable sorts by fingerprint: id order within a fingerprint. The pairs
	// carry the ids themselves, so that the postings are written without
	// reading ids in fingerprint order, a cache miss a posting; only
	// names, if there are any, are fetched by index.
	if !p.Named() {
		ids = slices.Clone(p.IDs)
		radix.SortPairs(keys, ids)
		return keys, ids, nil
	}
	type at struct {
		id uint64
		i  uint32
	}
	pairs := make([]at, len(keys))
	for i, id := range p.IDs {
		pairs[i] = at{id, uint32(i)}
	}
	radix.SortPairs(keys, pairs)
	ids, order = make([]uint64, len(keys)), make([]uint32, len(keys))
	for i, a := range pairs {
		ids[i], order[i] = a.id, a.i
	}
	return keys, ids, order
}

// permute makes the part's documents those at order, in that order.
func (p *Part) permute(order []uint32) {
	ids, fps := make([]uint64, len(order)), make([]uint64, len(order))
	var ends []uint32
	var names []byte
	if p.Named() {
		ends, names = make([]uint32, len(order)), make([]byte, 0, len(p.names))
	}
	for i, j := range order {
		ids[i], fps[i] = p.IDs[j], p.FPs[j]
		if ends != nil {
			names = append(names, p.Name(int(j))...)
			ends[i] = uint32(len(names))
		}
	}
	p.IDs, p.FPs, p.ends, p.names = ids, fps, ends, names
}
