package sketch

import (
	"encoding/binary"
	"fmt"

	"github.com/simhashdb/simhashdb/internal/mix"
)

// A sketch's 2-bit slots estimate a similarity well but cannot find
// candidates: two unrelated documents agree in a slot one time in four,
// so a band of slots long enough to be rare by chance is rare for
// near-duplicates too. The bins' full minima can: a band key hashes the
// minima of Rows bins, and two documents share it with probability about
// J^Rows, about 0 for unrelated ones. A document that shares any of
// Bands keys with another is its candidate (locality-sensitive hashing
// with bands; Leskovec, Rajaraman and Ullman, Mining of Massive Datasets,
// 3.4), which a sort of the keys finds among any number of documents in
// time linear in them.

// Layout is how a record's band keys are cut from its bins: Bands keys,
// key i hashing the minima of bins i*Rows to (i+1)*Rows-1, chosen so that
// pairs of similarity MinSimilarity share a key with probability of at
// least 0.95 (1 - (1 - J^Rows)^Bands) and pairs 0.1 above it at least
// 0.997.
type Layout struct {
	MinSimilarity float64
	Bands, Rows   int
}

// layouts are the layouts LayoutFor chooses among, by MinSimilarity; each
// has its own number of bands, so that a record's size names its layout.
var layouts = [...]Layout{
	{MinSimilarity: 0.5, Bands: 24, Rows: 3},
	{MinSimilarity: 0.6, Bands: 22, Rows: 4},
	{MinSimilarity: 0.7, Bands: 20, Rows: 5},
	{MinSimilarity: 0.8, Bands: 16, Rows: 7},
}

// LowestSimilarity is the lowest similarity a layout finds candidates
// for.
const LowestSimilarity = 0.5

// LayoutFor returns the layout that finds the candidates of pairs at
// least s similar with the fewest below it: the one of the highest
// MinSimilarity not above s.
func LayoutFor(s float64) (Layout, error) {
	if !(s >= LowestSimilarity && s <= 1) {
		return Layout{}, fmt.Errorf("sketch: similarity %g: bands find candidates from %g to 1", s, LowestSimilarity)
	}
	l := layouts[0]
	for _, c := range layouts {
		if c.MinSimilarity <= s {
			l = c
		}
	}
	return l, nil
}

// LayoutOfSize returns the layout of records of size bytes (RecordSize);
// ok is false for a size no layout has, a bare sketch's included.
func LayoutOfSize(size int) (l Layout, ok bool) {
	for _, c := range layouts {
		if c.RecordSize() == size {
			return c, true
		}
	}
	return Layout{}, false
}

// RecordSize is the bytes of a record of the layout: the sketch, then
// Bands keys of 4 bytes, little-endian.
func (l Layout) RecordSize() int { return Size + 4*l.Bands }

// AppendRecord appends the record of the set added (Sketch, then its band
// keys) to dst. The empty set's keys are all zeros.
func (b *Builder) AppendRecord(dst []byte, l Layout) []byte {
	s := b.Sketch()
	dst = append(dst, s[:]...)
	if b.n == 0 {
		return append(dst, make([]byte, 4*l.Bands)...)
	}
	m := b.densified()
	for i := range l.Bands {
		x := uint64(i+1) * 0x9e3779b97f4a7c15
		for _, v := range m[i*l.Rows : (i+1)*l.Rows] {
			x = mix.Murmur3(x ^ v)
		}
		dst = binary.LittleEndian.AppendUint32(dst, uint32(x>>32))
	}
	return dst
}

// BandKey returns band i's key of a record (AppendRecord's bytes).
func BandKey(record []byte, i int) uint32 {
	return binary.LittleEndian.Uint32(record[Size+4*i:])
}
