// Package permutation builds the table designs of Manku, Jain and Das Sarma
// (section 3.1): each table stores every fingerprint with its 64 bit positions
// permuted so that a chosen set of blocks comes first, and a probe fixes the
// top p bits of the permuted query. If two fingerprints differ in at most k
// bits and the 64 bits are split into r > k blocks, at least r-k blocks are
// identical, so one table per choice of r-k leading blocks finds every
// neighbour.
//
// The paper's Example 3.1 (f = 64, k = 3, 2^34 fingerprints) is reproduced by
// Paper and by Optimize:
//
//	tables  design                                            p_i     candidates per probe
//	20      6 blocks (11,11,11,11,10,10), choose 3            31-33   ~8
//	16      4 blocks of 16 choose 1, then 4 blocks of 12      28      ~64
//	10      5 blocks (13,13,13,13,12), choose 2               25-26   ~512
//	4       4 blocks of 16, choose 1                          16      ~256K
package permutation

import (
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
)

// Segment is a run of Width contiguous bits of the original fingerprint,
// whose lowest bit is at position Shift (0 = least significant).
type Segment struct {
	Shift, Width uint8
}

// Table is one permuted table: its segments, placed from the most significant
// end of the permuted fingerprint down, and Prefix, the number of leading
// permuted bits a probe fixes.
type Table struct {
	Segments []Segment
	Prefix   int
	// compiled form: for each segment, its mask at the source and the left
	// and right shifts (one of them 0) that move it into place, so that
	// permuting is one mask and two shifts per segment, without branches.
	masks       []uint64
	left, right []uint8
}

// Design is a set of tables that together find every fingerprint within
// Hamming distance K of a query.
//
// A design for candidates, whose answers something else then verifies (a
// text index's, with its sketches), may set Exact below K: within Exact
// the tables find every fingerprint; beyond it, up to K, one whose
// difference from the query leaves some table's prefix clean, which such a
// design makes likely with fewer tables than finding all would take
// (Covering). Zero means K.
type Design struct {
	K      int
	Exact  int
	Tables []Table
}

// ExactWithin returns the distance within which the design finds every
// fingerprint: Exact if set, else K.
func (d *Design) ExactWithin() int {
	if d.Exact > 0 && d.Exact < d.K {
		return d.Exact
	}
	return d.K
}

// Errors.
var (
	// ErrInvalid is wrapped by every error for a design that is malformed or
	// does not find all neighbours within K.
	ErrInvalid = errors.New("permutation: invalid design")
)

func newTable(segs []Segment, prefix int) Table {
	t := Table{Segments: segs, Prefix: prefix}
	pos := 64
	for _, s := range segs {
		pos -= int(s.Width)
		t.masks = append(t.masks, maskOf(s))
		d := pos - int(s.Shift)
		t.left = append(t.left, uint8(max(d, 0)))
		t.right = append(t.right, uint8(max(-d, 0)))
	}
	return t
}

func maskOf(s Segment) uint64 {
	if s.Width == 64 {
		return ^uint64(0)
	}
	return ((1 << s.Width) - 1) << s.Shift
}

// Permute returns x with its bits in the table's order.
func (t *Table) Permute(x uint64) uint64 {
	var out uint64
	for i, m := range t.masks {
		out |= (x & m) << t.left[i] >> t.right[i]
	}
	return out
}

// Unpermute inverts Permute.
func (t *Table) Unpermute(y uint64) uint64 {
	var out uint64
	for i, m := range t.masks {
		out |= (y << t.right[i] >> t.left[i]) & m
	}
	return out
}

// Range returns the smallest and largest permuted fingerprints whose top
// Prefix bits equal those of the permuted query pq: the range a probe scans.
func (t *Table) Range(pq uint64) (lo, hi uint64) {
	if t.Prefix >= 64 {
		return pq, pq
	}
	low := ^uint64(0) >> uint(t.Prefix)
	return pq &^ low, pq | low
}

// String describes the table as its segments, top first, e.g.
// "[63:53 52:42 | 41:32 ...] p=22".
func (t *Table) String() string {
	var b strings.Builder
	b.WriteByte('[')
	used := 0
	for i, s := range t.Segments {
		if i > 0 {
			b.WriteByte(' ')
		}
		if used == t.Prefix && i > 0 {
			b.WriteString("| ")
		}
		fmt.Fprintf(&b, "%d:%d", int(s.Shift)+int(s.Width)-1, s.Shift)
		used += int(s.Width)
	}
	fmt.Fprintf(&b, "] p=%d", t.Prefix)
	return b.String()
}

// Clone returns a copy of d that shares nothing with it.
func (d *Design) Clone() *Design {
	c := &Design{K: d.K, Exact: d.Exact, Tables: make([]Table, len(d.Tables))}
	for i, t := range d.Tables {
		c.Tables[i] = Table{Segments: slices.Clone(t.Segments), Prefix: t.Prefix,
			masks: slices.Clone(t.masks), left: slices.Clone(t.left), right: slices.Clone(t.right)}
	}
	return c
}

// MinPrefix returns the smallest p_i of the design.
func (d *Design) MinPrefix() int {
	m := 64
	for _, t := range d.Tables {
		m = min(m, t.Prefix)
	}
	return m
}

// Describe writes, for a corpus of 2^logN fingerprints, every table with its
// p_i and expected candidates per probe 2^(logN-p_i), and the totals: the
// candidates a query examines and the space factor (each table holds every
// fingerprint once).
func (d *Design) Describe(w io.Writer, logN float64) {
	fmt.Fprintf(w, "design: %d tables, k = %d, corpus 2^%.4g\n", len(d.Tables), d.K, logN)
	if e := d.ExactWithin(); e < d.K {
		fmt.Fprintf(w, "every neighbour within %d; beyond, those whose difference leaves a table's prefix clean:", e)
		for x := e + 1; x <= d.K; x++ {
			fmt.Fprintf(w, " %.1f%% at %d", 100*d.Finds(x), x)
		}
		fmt.Fprintln(w, " (random differences)")
	}
	total := 0.0
	for i, t := range d.Tables {
		c := math.Pow(2, logN-float64(t.Prefix))
		total += c
		fmt.Fprintf(w, "  table %2d  p=%2d  candidates/probe %-10.4g %s\n", i, t.Prefix, c, t.String())
	}
	fmt.Fprintf(w, "candidates per query: %.4g; space factor: %dx one table\n", total, len(d.Tables))
}

// CandidatesPerQuery returns the expected number of candidates a query
// examines over all tables for a corpus of 2^logN uniform fingerprints.
func (d *Design) CandidatesPerQuery(logN float64) float64 {
	total := 0.0
	for _, t := range d.Tables {
		total += math.Pow(2, logN-float64(t.Prefix))
	}
	return total
}

// DiskPage is the unit a probe of a table on the disk reads: the store's
// data block.
const DiskPage = 4096

// PagesPerQuery returns the pages of DiskPage bytes a query reads from the
// tables of a corpus of 2^logN uniform fingerprints when none of them is
// cached: per table, the page where its probe's range starts, and those
// the range runs on into, each fingerprint taking about the information
// bound, 64 - logN + log2(e) bits, in a table block.
func (d *Design) PagesPerQuery(logN float64) float64 {
	bits := 64 - logN + math.Log2E
	total := 0.0
	for _, t := range d.Tables {
		total += 1 + math.Pow(2, logN-float64(t.Prefix))*bits/8/DiskPage
	}
	return total
}
