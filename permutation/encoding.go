package permutation

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math/bits"
	"math/rand/v2"
)

const (
	magic = "SHPD"
	// Version 1 is a design exact within K; version 2 adds a byte, Exact,
	// after K. A design exact within K is written as version 1, so that
	// every build reads it.
	version      = 1
	versionExact = 2
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// MarshalBinary encodes the design: magic, version, K, Exact if below K
// (version 2), the tables (p_i and segments) and a CRC-32C of all that.
func (d *Design) MarshalBinary() ([]byte, error) {
	b := append([]byte(magic), version, byte(d.K))
	if e := d.ExactWithin(); e < d.K {
		b = append([]byte(magic), versionExact, byte(d.K), byte(e))
	}
	b = binary.AppendUvarint(b, uint64(len(d.Tables)))
	for _, t := range d.Tables {
		b = append(b, byte(t.Prefix), byte(len(t.Segments)))
		for _, s := range t.Segments {
			b = append(b, s.Shift, s.Width)
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli)), nil
}

// Equal reports whether d and o are the same design: the same K and exact
// distance, and the same tables in the same order, as MarshalBinary writes
// them. A nil design equals only nil.
func (d *Design) Equal(o *Design) bool {
	if d == nil || o == nil {
		return d == o
	}
	x, err1 := d.MarshalBinary()
	y, err2 := o.MarshalBinary()
	return err1 == nil && err2 == nil && bytes.Equal(x, y)
}

// UnmarshalBinary decodes a design written by MarshalBinary and validates it.
func (d *Design) UnmarshalBinary(b []byte) error {
	if len(b) < len(magic)+2+1+4 || string(b[:len(magic)]) != magic {
		return fmt.Errorf("%w: not an encoded design", ErrInvalid)
	}
	body, sum := b[:len(b)-4], binary.LittleEndian.Uint32(b[len(b)-4:])
	if got := crc32.Checksum(body, castagnoli); got != sum {
		return fmt.Errorf("%w: checksum %08x, computed %08x", ErrInvalid, sum, got)
	}
	v := body[len(magic)]
	if v != version && v != versionExact {
		return fmt.Errorf("%w: format version %d, this build reads %d and %d", ErrInvalid, v, version, versionExact)
	}
	k := int(body[len(magic)+1])
	p := body[len(magic)+2:]
	exact := 0
	if v == versionExact {
		if len(p) == 0 {
			return fmt.Errorf("%w: exact distance truncated", ErrInvalid)
		}
		if exact = int(p[0]); exact == 0 || exact >= k {
			return fmt.Errorf("%w: exact distance %d not in 1..K-1 = %d (version %d)", ErrInvalid, exact, k-1, v)
		}
		p = p[1:]
	}
	n, m := binary.Uvarint(p)
	if m <= 0 || n == 0 || n > 1<<16 {
		return fmt.Errorf("%w: bad table count", ErrInvalid)
	}
	p = p[m:]
	tables := make([]Table, 0, n)
	for i := range n {
		if len(p) < 2 {
			return fmt.Errorf("%w: table %d truncated", ErrInvalid, i)
		}
		prefix, ns := int(p[0]), int(p[1])
		p = p[2:]
		if len(p) < 2*ns {
			return fmt.Errorf("%w: table %d truncated", ErrInvalid, i)
		}
		segs := make([]Segment, ns)
		for j := range segs {
			segs[j] = Segment{Shift: p[2*j], Width: p[2*j+1]}
		}
		p = p[2*ns:]
		tables = append(tables, Table{Segments: segs, Prefix: prefix})
	}
	if len(p) != 0 {
		return fmt.Errorf("%w: %d trailing bytes", ErrInvalid, len(p))
	}
	nd, err := NewExact(k, exact, tables)
	if err != nil {
		return err
	}
	*d = *nd
	return nil
}

// New makes a design from tables given as segments and prefixes, and
// validates it (see Validate).
func New(k int, tables []Table) (*Design, error) { return NewExact(k, 0, tables) }

// NewExact is New of a design exact within exact (Design.Exact).
func NewExact(k, exact int, tables []Table) (*Design, error) {
	d := &Design{K: k, Exact: exact}
	for i, t := range tables {
		var seen uint64
		total := 0
		for _, s := range t.Segments {
			if s.Width == 0 || int(s.Shift)+int(s.Width) > 64 {
				return nil, fmt.Errorf("%w: table %d: segment %d:%d outside 64 bits", ErrInvalid, i, int(s.Shift)+int(s.Width)-1, s.Shift)
			}
			m := maskOf(s)
			if seen&m != 0 {
				return nil, fmt.Errorf("%w: table %d: bits %d:%d used twice", ErrInvalid, i, int(s.Shift)+int(s.Width)-1, s.Shift)
			}
			seen |= m
			total += int(s.Width)
		}
		if total != 64 {
			return nil, fmt.Errorf("%w: table %d: segments cover %d bits, not 64", ErrInvalid, i, total)
		}
		if t.Prefix < 0 || t.Prefix > 64 {
			return nil, fmt.Errorf("%w: table %d: prefix %d outside 0..64", ErrInvalid, i, t.Prefix)
		}
		d.Tables = append(d.Tables, newTable(t.Segments, t.Prefix))
	}
	if err := d.Validate(); err != nil {
		return nil, err
	}
	return d, nil
}

// ExhaustiveK is the largest K for which Validate checks every error pattern;
// above it, Validate checks a seeded random sample of patterns.
const ExhaustiveK = 4

// Validate checks that every error pattern of weight at most ExactWithin
// leaves the top p_i bits of at least one table untouched, so that a probe
// of that table finds the neighbour: exhaustively up to ExhaustiveK bits,
// on 200,000 seeded random patterns of each weight above that.
func (d *Design) Validate() error {
	if d.K < 0 || d.K > 63 {
		return fmt.Errorf("%w: K=%d outside 0..63", ErrInvalid, d.K)
	}
	if d.Exact < 0 || d.Exact > d.K {
		return fmt.Errorf("%w: exact distance %d outside 0..K = %d", ErrInvalid, d.Exact, d.K)
	}
	if len(d.Tables) == 0 {
		return fmt.Errorf("%w: no tables", ErrInvalid)
	}
	if e, ok := d.Uncovered(); ok {
		return fmt.Errorf("%w: the %d-bit difference %016x is in the prefix of every table, so neighbours at that distance are missed", ErrInvalid, bits.OnesCount64(e), e)
	}
	return nil
}

// Covers reports whether some table's prefix is untouched by the difference
// e (the XOR of a query and a stored fingerprint).
func (d *Design) Covers(e uint64) bool {
	for i := range d.Tables {
		t := &d.Tables[i]
		if t.Prefix == 0 || t.Permute(e)>>(64-uint(t.Prefix)) == 0 {
			return true
		}
	}
	return false
}

// Uncovered returns an error pattern of weight <= ExactWithin that no
// table covers.
func (d *Design) Uncovered() (uint64, bool) {
	k := d.ExactWithin()
	if k <= ExhaustiveK {
		var found uint64
		var ok bool
		var rec func(start int, e uint64, left int) bool
		rec = func(start int, e uint64, left int) bool {
			if !d.Covers(e) {
				found, ok = e, true
				return true
			}
			if left == 0 {
				return false
			}
			for b := start; b < 64; b++ {
				if rec(b+1, e|1<<b, left-1) {
					return true
				}
			}
			return false
		}
		rec(0, 0, k)
		return found, ok
	}
	r := rand.New(rand.NewPCG(uint64(k), 64))
	for w := 1; w <= k; w++ {
		for range 200000 {
			var e uint64
			for bits.OnesCount64(e) < w {
				e |= 1 << r.IntN(64)
			}
			if !d.Covers(e) {
				return e, true
			}
		}
	}
	return 0, false
}
