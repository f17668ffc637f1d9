package table

import (
	"slices"
	"unsafe"

	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/huffman"

	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/engine/internal/cache"
)

// Index is what a state knows of one permuted table: the in-memory
// directory of its blocks, and its Huffman codes.
type Index struct {
	// The fields a probe reads come first, so that they share cache lines.

	// radix[b] is the first block whose key is >= b << shift: a probe
	// binary-searches only between radix[b] and radix[b+1], a block or
	// three, instead of the whole directory (whose misses cost more than
	// the rest of a warm probe).
	radix []uint32
	shift uint
	keys  []uint64 // last permuted fingerprint of each block, ascending
	// pend counts each block's pending fingerprints: added by flushes but
	// not yet merged into the block, kept beside it (format.SpacePending) so that
	// a flush rewrites a whole block only once it has gathered format.PendingMax
	// of them. A block covers (keys[j-1], keys[j]], the last one also
	// what lies above its key; readers see the block and its pending list
	// merged. Nil when no block has any.
	pend []uint16
	// The blocks' cache slots: in slab, one array in block order, for a
	// directory read at open or written by a bulk load (a probe finds slot
	// j by address, one dependent load less), or else in slots, which a
	// flush's new directory shares with the one before.
	slab  []cache.Slot
	slots []*cache.Slot
	dir   []format.DirEntry // each block's size and codec version

	codes codec.CodeMap // by id; every block names the code it was written with
	code  uint32        // the id of the code new blocks use; 0: none yet
}

// Len is the number of blocks.
func (ti *Index) Len() int { return len(ti.keys) }

// Key is block j's key: its last permuted fingerprint.
func (ti *Index) Key(j int) uint64 { return ti.keys[j] }

// Keys are the blocks' keys, ascending: the caller reads them, never
// writes.
func (ti *Index) Keys() []uint64 { return ti.keys }

// Entry is block j's directory entry (its size and codec version).
func (ti *Index) Entry(j int) format.DirEntry { return ti.dir[j] }

// Codes are the table's Huffman codes by id; Code is the id new blocks
// are written with (0: none yet).
func (ti *Index) Codes() codec.CodeMap { return ti.codes }

// Code: see Codes.
func (ti *Index) Code() uint32 { return ti.code }

// AddCode adds code id, which becomes the one new blocks use if it is the
// newest.
func (ti *Index) AddCode(id uint32, c *huffman.Code) {
	if ti.codes == nil {
		ti.codes = codec.CodeMap{}
	}
	ti.codes[id] = c
	ti.code = max(ti.code, id)
}

// SetPending sets block j's count of pending fingerprints (at open: the
// directory's entries do not hold it).
func (ti *Index) SetPending(j int, n uint16) {
	if ti.pend == nil {
		ti.pend = make([]uint16, len(ti.keys))
	}
	ti.pend[j] = n
}

// Exact trims the directory's slices to their length (a loaded
// directory does not grow) and gives its blocks new, empty slots in one
// array.
func (ti *Index) Exact() {
	ti.keys, ti.dir = slices.Clone(ti.keys), slices.Clone(ti.dir)
	ti.SlabSlots()
}

// PendingTotal is the fingerprints in every block's pending list.
func (ti *Index) PendingTotal() int64 {
	n := int64(0)
	for _, p := range ti.pend {
		n += int64(p)
	}
	return n
}

// Bytes is the size of every block.
func (ti *Index) Bytes() int64 {
	n := int64(0)
	for _, e := range ti.dir {
		n += int64(e.Size())
	}
	return n
}

// MemoryBytes is the memory the directory holds: its arrays, and a cache
// slot a block, whether in its slab, a slab of a directory before it or
// one of its own.
func (ti *Index) MemoryBytes() int64 {
	slot := int64(unsafe.Sizeof(cache.Slot{}))
	n := int64(cap(ti.keys))*8 + int64(cap(ti.dir))*int64(unsafe.Sizeof(format.DirEntry(0))) + int64(cap(ti.pend))*2 + int64(len(ti.radix))*4
	n += int64(cap(ti.slots))*int64(unsafe.Sizeof((*cache.Slot)(nil))) + int64(len(ti.keys))*slot
	return n
}

// Sized returns the empty directory of a table with codes, with room for
// size blocks: a flush fills it (AppendRange, AppendBlock), then Builds it.
func Sized(codes codec.CodeMap, code uint32, size int) Index {
	return Index{codes: codes, code: code, keys: make([]uint64, 0, size), dir: make([]format.DirEntry, 0, size),
		pend: make([]uint16, 0, size), slots: make([]*cache.Slot, 0, size)}
}

// Built reports whether Build has indexed the directory.
func (ti *Index) Built() bool { return ti.radix != nil }

// AppendBlock adds a block after the others: its key, directory entry,
// pending count and cache slot. The caller indexes the table once it is
// whole.
func (ti *Index) AppendBlock(key uint64, e format.DirEntry, pending uint16, s *cache.Slot) {
	ti.keys = append(ti.keys, key)
	ti.dir = append(ti.dir, e)
	ti.slots = append(ti.slots, s)
	if ti.pend != nil || pending > 0 {
		if ti.pend == nil {
			ti.pend = make([]uint16, len(ti.keys)-1, cap(ti.keys))
		}
		ti.pend = append(ti.pend, pending)
	}
}

// Slot returns block j's cache slot.
func (ti *Index) Slot(j int) *cache.Slot {
	if ti.slab != nil {
		return &ti.slab[j]
	}
	return ti.slots[j]
}

// SlabSlots gives the directory's blocks new, empty slots in one array.
func (ti *Index) SlabSlots() {
	ti.slab, ti.slots = make([]cache.Slot, len(ti.keys)), nil
}

// AppendRange appends blocks from..to-1 of old, with their slots and
// pending counts.
func (ti *Index) AppendRange(old *Index, from, to int) {
	ti.keys = append(ti.keys, old.keys[from:to]...)
	ti.dir = append(ti.dir, old.dir[from:to]...)
	if old.slab == nil {
		ti.slots = append(ti.slots, old.slots[from:to]...)
	} else {
		for j := from; j < to; j++ {
			ti.slots = append(ti.slots, &old.slab[j])
		}
	}
	switch {
	case old.pend != nil:
		if ti.pend == nil {
			ti.pend = make([]uint16, len(ti.keys)-(to-from), cap(ti.keys))
		}
		ti.pend = append(ti.pend, old.pend[from:to]...)
	case ti.pend != nil:
		ti.pend = append(ti.pend, make([]uint16, to-from)...)
	}
}

// Build builds the radix directory over keys, two to four entries a
// block (4 bytes each: with the key, slot and size, the directory costs
// 30-40 bytes a block).
func (ti *Index) Build() {
	bitsN := 1
	for 1<<bitsN < 2*len(ti.keys) && bitsN < 24 {
		bitsN++
	}
	ti.shift = uint(64 - bitsN)
	ti.radix = make([]uint32, 1<<bitsN+1)
	j := 0
	for b := range 1 << bitsN {
		for j < len(ti.keys) && ti.keys[j]>>ti.shift < uint64(b) {
			j++
		}
		ti.radix[b] = uint32(j)
	}
	ti.radix[1<<bitsN] = uint32(len(ti.keys))
}

// Start returns the first block a probe of the range from lo must read:
// find's, or the last block when lo lies above every key and that block's
// pending list may hold values there.
func (ti *Index) Start(lo uint64) int {
	j := ti.Find(lo)
	if j == len(ti.keys) && j > 0 && ti.Pending(j-1) > 0 {
		j--
	}
	return j
}

// StartCached is start, and what block j's slot held: for a directory
// whose slots are a slab, the slots of the two blocks a radix bucket
// usually names are read together with their keys, so that a probe's chain
// of dependent loads has no step for the slot. ok is false where that does
// not apply (slots apart, a crowded bucket, the last blocks, a range past
// both keys): the caller reads slot j itself.
func (ti *Index) StartCached(lo uint64) (j int, b *cache.Entry, ok bool) {
	if ti.slab == nil {
		return ti.Start(lo), nil, false
	}
	r := lo >> ti.shift
	first, end := int(ti.radix[r]), int(ti.radix[r+1])
	if end-first > 2 || first+1 >= len(ti.keys) {
		return ti.Start(lo), nil, false
	}
	held := [2]*cache.Entry{ti.slab[first].Peek(), ti.slab[first+1].Peek()}
	// Counted without a branch on the keys, as in find.
	c := 0
	if ti.keys[first] < lo {
		c++
	}
	if ti.keys[first+1] < lo {
		c++
	}
	c = min(c, end-first)
	if c == 2 {
		return ti.Start(lo), nil, false
	}
	return first + c, held[c], true
}

// Pending returns block j's pending count.
func (ti *Index) Pending(j int) int {
	if ti.pend == nil {
		return 0
	}
	return int(ti.pend[j])
}

// PendingAt is pending for any j, 0 outside the directory.
func (ti *Index) PendingAt(j int) int {
	if j < 0 || j >= len(ti.keys) {
		return 0
	}
	return ti.Pending(j)
}

// Find returns the first block whose key is >= v (len(keys) if none).
func (ti *Index) Find(v uint64) int {
	b := v >> ti.shift
	lo, hi := int(ti.radix[b]), int(ti.radix[b+1])
	if hi-lo > 2 { // a crowded bucket (clustered fingerprints)
		j, _ := slices.BinarySearch(ti.keys[lo:hi], v)
		return lo + j
	}
	// Without a branch on the keys, which no predictor would guess right
	// and which would hold back the other tables' loads until the miss is
	// back: read both (hi == lo, an empty bucket, reads the key of the
	// next block, harmless) and count.
	last := len(ti.keys) - 1
	if last < 0 {
		return 0
	}
	c := 0
	if ti.keys[min(lo, last)] < v {
		c++
	}
	if ti.keys[min(lo+1, last)] < v {
		c++
	}
	return lo + min(c, hi-lo)
}
