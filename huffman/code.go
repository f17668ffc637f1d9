// Package huffman implements the canonical, length-limited Huffman codes of
// the paper's compressed tables: a code over the symbols h = 0..63 (the
// position of the most significant bit in which a fingerprint differs from
// its predecessor), built from a histogram, stored as its 64 code lengths,
// and decoded with a single table look-up per symbol.
package huffman

import (
	"container/heap"
	"errors"
	"fmt"
	"slices"
)

// Symbols is the size of the alphabet.
const Symbols = 64

// MaxLen is the longest code. With it every symbol decodes with one look-up
// in a table of 2^MaxLen entries (8 KiB).
const MaxLen = 12

// ErrCorrupt is wrapped by errors for invalid code descriptions and for bit
// patterns that are not a code word.
var ErrCorrupt = errors.New("huffman: corrupt")

// Code is a canonical prefix code over Symbols symbols, every symbol with a
// code word of 1..MaxLen bits.
type Code struct {
	lens  [Symbols]uint8
	codes [Symbols]uint16
	// table maps the next MaxLen bits of a stream to symbol<<4 | length; a
	// zero entry is not a code word (possible only for incomplete codes).
	table [1 << MaxLen]uint16
}

// Build returns the optimal code of at most MaxLen bits per symbol for the
// histogram freq. Every symbol gets a code word, also those with frequency 0
// (counted as if seen once), so that the code can encode any h.
func Build(freq *[Symbols]uint64) *Code {
	var lens [Symbols]uint8
	type node struct {
		w    uint64
		sym  int // leaf symbol, or -1
		l, r int
	}
	nodes := make([]node, 0, 2*Symbols)
	h := &nodeHeap{}
	for s := range Symbols {
		w := freq[s]
		if w == 0 {
			w = 1
		}
		nodes = append(nodes, node{w: w, sym: s})
		heap.Push(h, item{w: w, i: s})
	}
	for h.Len() > 1 {
		a, b := heap.Pop(h).(item), heap.Pop(h).(item)
		nodes = append(nodes, node{w: a.w + b.w, sym: -1, l: a.i, r: b.i})
		heap.Push(h, item{w: a.w + b.w, i: len(nodes) - 1})
	}
	var walk func(i int, depth uint8)
	walk = func(i int, depth uint8) {
		if nodes[i].sym >= 0 {
			lens[nodes[i].sym] = max(depth, 1)
			return
		}
		walk(nodes[i].l, depth+1)
		walk(nodes[i].r, depth+1)
	}
	walk(len(nodes)-1, 0)
	limit(&lens, freq)
	c, err := FromLengths(lens[:])
	if err != nil {
		panic("huffman: built an invalid code: " + err.Error()) // a bug, not bad input
	}
	return c
}

// limit shortens codes longer than MaxLen and restores the Kraft inequality
// by lengthening the least frequent codes shorter than MaxLen, one bit at a
// time (the heuristic of zlib and JPEG encoders; optimal codes rarely need it
// for this alphabet).
func limit(lens *[Symbols]uint8, freq *[Symbols]uint64) {
	over := false
	for s := range lens {
		if lens[s] > MaxLen {
			lens[s] = MaxLen
			over = true
		}
	}
	if !over {
		return
	}
	kraft := func() int {
		k := 0
		for _, l := range lens {
			k += 1 << (MaxLen - l)
		}
		return k
	}
	order := make([]int, Symbols)
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int {
		if freq[a] != freq[b] {
			if freq[a] < freq[b] {
				return -1
			}
			return 1
		}
		return a - b
	})
	for kraft() > 1<<MaxLen {
		for _, s := range order { // least frequent first
			if lens[s] < MaxLen {
				lens[s]++
				break
			}
		}
	}
}

type item struct {
	w uint64
	i int
}

type nodeHeap []item

func (h nodeHeap) Len() int { return len(h) }
func (h nodeHeap) Less(a, b int) bool {
	if h[a].w != h[b].w {
		return h[a].w < h[b].w
	}
	return h[a].i < h[b].i // deterministic ties
}
func (h nodeHeap) Swap(a, b int) { h[a], h[b] = h[b], h[a] }
func (h *nodeHeap) Push(x any)   { *h = append(*h, x.(item)) }
func (h *nodeHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

// FromLengths returns the canonical code with the given code lengths, one
// per symbol. It fails unless every length is 1..MaxLen and the lengths
// satisfy the Kraft inequality (sum of 2^-len <= 1).
func FromLengths(lens []uint8) (*Code, error) {
	if len(lens) != Symbols {
		return nil, fmt.Errorf("%w: %d code lengths, want %d", ErrCorrupt, len(lens), Symbols)
	}
	c := &Code{}
	kraft := 0
	for s, l := range lens {
		if l < 1 || l > MaxLen {
			return nil, fmt.Errorf("%w: symbol %d has code length %d, want 1..%d", ErrCorrupt, s, l, MaxLen)
		}
		c.lens[s] = l
		kraft += 1 << (MaxLen - l)
	}
	if kraft > 1<<MaxLen {
		return nil, fmt.Errorf("%w: code lengths oversubscribe the code space (Kraft sum %d/%d)", ErrCorrupt, kraft, 1<<MaxLen)
	}
	// Canonical assignment: by length, then symbol.
	var count [MaxLen + 1]int
	for _, l := range c.lens {
		count[l]++
	}
	var next [MaxLen + 2]uint16
	code := uint16(0)
	for l := 1; l <= MaxLen; l++ {
		code = (code + uint16(count[l-1])) << 1
		next[l] = code
	}
	for s, l := range c.lens {
		c.codes[s] = next[l]
		next[l]++
		// Fill every table slot whose top l bits are this code word.
		first := int(c.codes[s]) << (MaxLen - l)
		for j := first; j < first+1<<(MaxLen-l); j++ {
			c.table[j] = uint16(s)<<4 | uint16(l)
		}
	}
	return c, nil
}

// Len returns the code length of symbol s.
func (c *Code) Len(s int) int { return int(c.lens[s]) }

// Lengths returns the code lengths.
func (c *Code) Lengths() [Symbols]uint8 { return c.lens }

// Encode appends the code word of symbol s (0 <= s < Symbols) to w.
func (c *Code) Encode(w *Writer, s int) { w.WriteBits(uint64(c.codes[s]), uint(c.lens[s])) }

// Decode reads one symbol from r. It returns an error for bits that are not a
// code word; reading past the end is reported by r.Err.
func (c *Code) Decode(r *Reader) (int, error) {
	e := c.table[r.Peek(MaxLen)]
	if e == 0 {
		return 0, fmt.Errorf("%w: bits %0*b at bit %d are not a code word", ErrCorrupt, MaxLen, r.Peek(MaxLen), r.Consumed())
	}
	r.Skip(uint(e & 0xf))
	return int(e >> 4), nil
}

// Entry returns the decoding table entry for the next MaxLen bits peeked from
// a stream: the symbol, its code length, and ok=false when they start no code
// word. Decoders with their own bit loop use it.
func (c *Code) Entry(bits uint64) (sym int, n uint, ok bool) {
	e := c.table[bits]
	return int(e >> 4), uint(e & 0xf), e != 0
}

// Table returns the decoding table: entry Entry(bits) packed as
// symbol<<4 | length, zero for bits that start no code word. Decoders whose
// hot loop cannot afford a call per symbol index it directly; it must not be
// modified.
func (c *Code) Table() *[1 << MaxLen]uint16 { return &c.table }

// MarshalBinary encodes the code as its 64 lengths, two per byte (32 bytes).
func (c *Code) MarshalBinary() ([]byte, error) {
	b := make([]byte, Symbols/2)
	for s := 0; s < Symbols; s += 2 {
		b[s/2] = c.lens[s]<<4 | c.lens[s+1]
	}
	return b, nil
}

// Unmarshal decodes a code written by MarshalBinary and validates it.
func Unmarshal(b []byte) (*Code, error) {
	if len(b) != Symbols/2 {
		return nil, fmt.Errorf("%w: encoded code is %d bytes, want %d", ErrCorrupt, len(b), Symbols/2)
	}
	lens := make([]uint8, Symbols)
	for i, x := range b {
		lens[2*i], lens[2*i+1] = x>>4, x&0xf
	}
	return FromLengths(lens)
}

// Cost returns the bits the code spends on the histogram's symbols.
func (c *Code) Cost(freq *[Symbols]uint64) uint64 {
	var n uint64
	for s, f := range freq {
		n += f * uint64(c.lens[s])
	}
	return n
}
