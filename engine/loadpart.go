package engine

import (
	"slices"

	"github.com/simhashdb/simhashdb/internal/radix"
)

// loadPart is documents a load holds in memory, in columns: ids,
// fingerprints and stored names in one byte slice, nothing for the
// collector to scan and 20 bytes a document besides its name.
type loadPart struct {
	ids, fps []uint64
	// ends says where each document's stored name ends in names (a part
	// holds at most 1 GiB: loadMemory); nil while no document has a name.
	ends  []uint32
	names []byte
}

// add appends d, as the index stores it (with its sketch before its
// name), or refuses it (checkDoc).
func (p *loadPart) add(db *DB, d *Doc) error {
	if err := db.checkDoc(d); err != nil {
		return err
	}
	p.ids = append(p.ids, d.ID)
	p.fps = append(p.fps, d.Fingerprint)
	if p.ends == nil && len(d.Sketch)+len(d.Name) == 0 {
		return nil
	}
	if p.ends == nil {
		p.ends = make([]uint32, len(p.ids)-1, cap(p.ids))
	}
	p.names = append(append(p.names, d.Sketch...), d.Name...)
	p.ends = append(p.ends, uint32(len(p.names)))
	return nil
}

func (p *loadPart) len() int { return len(p.ids) }

// memory is about the bytes the part holds.
func (p *loadPart) memory() int64 { return int64(len(p.ids))*20 + int64(len(p.names)) }

// name is document i's stored name.
func (p *loadPart) name(i int) []byte {
	if p.ends == nil {
		return nil
	}
	from := uint32(0)
	if i > 0 {
		from = p.ends[i-1]
	}
	return p.names[from:p.ends[i]]
}

func (p *loadPart) named() bool { return p.ends != nil }

func (p *loadPart) reset() {
	p.ids, p.fps, p.ends, p.names = p.ids[:0], p.fps[:0], nil, p.names[:0]
}

// sortByID orders the part by id, keeping of a repeated id the last
// document alone. A part already in strictly increasing id order (the
// usual bulk case) is left as it is.
func (p *loadPart) sortByID() {
	if strictly(p.ids) {
		return
	}
	keys := slices.Clone(p.ids)
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

// byPosting is the part's postings in order, (fingerprint, id): keys and
// ids, and for a part with names the index of each posting's document
// (order). The part must be in id order.
func (p *loadPart) byPosting() (keys, ids []uint64, order []uint32) {
	keys = slices.Clone(p.fps)
	// Stable sorts by fingerprint: id order within a fingerprint. The pairs
	// carry the ids themselves, so that the postings are written without
	// reading ids in fingerprint order, a cache miss a posting; only
	// names, if there are any, are fetched by index.
	if !p.named() {
		ids = slices.Clone(p.ids)
		radix.SortPairs(keys, ids)
		return keys, ids, nil
	}
	type at struct {
		id uint64
		i  uint32
	}
	pairs := make([]at, len(keys))
	for i, id := range p.ids {
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
func (p *loadPart) permute(order []uint32) {
	ids, fps := make([]uint64, len(order)), make([]uint64, len(order))
	var ends []uint32
	var names []byte
	if p.named() {
		ends, names = make([]uint32, len(order)), make([]byte, 0, len(p.names))
	}
	// The names are copied in the new order: a part's names are at most
	// its memory.
	for i, j := range order {
		ids[i], fps[i] = p.ids[j], p.fps[j]
		if ends != nil {
			names = append(names, p.name(int(j))...)
			ends[i] = uint32(len(names))
		}
	}
	p.ids, p.fps, p.ends, p.names = ids, fps, ends, names
}
