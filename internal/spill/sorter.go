package spill

import (
	"bufio"
	"cmp"
	"errors"
	"fmt"
	"os"
	"slices"
)

// Sorter is an external sort of records of any keys: Add takes them in any
// order and, each time the records held reach the memory given, sorts them
// and writes them as a run to a file of its own in a folder; Merge reads
// every run as one. Records of equal keys are kept once: the first added of
// those that were held together, the first run's across runs. Its files are
// removed by Close. Memory stays within about the bytes given, whatever
// the records, but for one value of up to MaxValue.
type Sorter struct {
	dir    string
	memory int
	recs   []held
	vals   []byte
	files  []*os.File
	bytes  int64 // written to runs
	total  int64 // records added
	closed bool
}

type held struct {
	a, b     uint64
	off, len uint32
}

// heldBytes is what a record held costs besides its value.
const heldBytes = 24

// NewSorter returns a Sorter that keeps its runs in dir (the system's
// temporary folder if empty) and holds about memory bytes of records
// before it writes one.
func NewSorter(dir string, memory int) *Sorter {
	return &Sorter{dir: dir, memory: max(memory, 1<<16)}
}

// Add adds a record; v is copied.
func (s *Sorter) Add(a, b uint64, v []byte) error {
	if s.closed {
		return errors.New("spill: add to a closed sorter")
	}
	if len(v) > MaxValue {
		return fmt.Errorf("spill: a value of %d bytes, at most %d", len(v), MaxValue)
	}
	// What is allocated counts, not what is used: a slice that must grow
	// to take the record would double past the memory given.
	recs, vals := cap(s.recs), cap(s.vals)
	if len(s.recs) == recs {
		recs = max(2*recs, 1024)
	}
	if len(s.vals)+len(v) > vals {
		vals = max(2*vals, len(s.vals)+len(v), 4096)
	}
	if recs*heldBytes+vals > s.memory && len(s.recs) > 0 {
		if err := s.spill(); err != nil {
			return err
		}
	}
	s.recs = append(s.recs, held{a: a, b: b, off: uint32(len(s.vals)), len: uint32(len(v))})
	s.vals = append(s.vals, v...)
	s.total++
	return nil
}

// Added is the number of records added.
func (s *Sorter) Added() int64 { return s.total }

// Spilled is the bytes written to runs so far.
func (s *Sorter) Spilled() int64 { return s.bytes }

// spill sorts the records held and writes them as a run.
func (s *Sorter) spill() error {
	// Among equal keys, (off, len) is the order they were added in: a
	// later record's value starts at or after an earlier one's end, and
	// at the same place only after an empty one.
	slices.SortFunc(s.recs, func(x, y held) int {
		switch {
		case x.a != y.a:
			return cmp.Compare(x.a, y.a)
		case x.b != y.b:
			return cmp.Compare(x.b, y.b)
		case x.off != y.off:
			return cmp.Compare(x.off, y.off)
		}
		return cmp.Compare(x.len, y.len)
	})
	f, err := os.CreateTemp(s.dir, "simhashdb-sort-*.run")
	if err != nil {
		return fmt.Errorf("spill: a run of the sort: %w", err)
	}
	s.files = append(s.files, f)
	bw := bufio.NewWriterSize(f, 1<<16)
	w := NewWriter(bw)
	for i, r := range s.recs {
		if i > 0 && r.a == s.recs[i-1].a && r.b == s.recs[i-1].b {
			continue
		}
		if err := w.Append(r.a, r.b, s.vals[r.off:r.off+r.len]); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return fmt.Errorf("spill: writing run %s: %w", f.Name(), err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("spill: writing run %s: %w", f.Name(), err)
	}
	if off, err := f.Seek(0, 1); err == nil {
		s.bytes += off
	}
	s.recs, s.vals = s.recs[:0], s.vals[:0]
	return nil
}

// Merge writes what is held as a last run and returns every record added
// in (A, B) order, those of equal keys once; the Sorter takes no more
// records. Its records are valid until Close.
func (s *Sorter) Merge() (*Deduped, error) {
	if s.closed {
		return nil, errors.New("spill: merge of a closed sorter")
	}
	if len(s.recs) > 0 {
		if err := s.spill(); err != nil {
			return nil, err
		}
	}
	s.recs, s.vals = nil, nil
	runs := make([]*Reader, len(s.files))
	for i, f := range s.files {
		if _, err := f.Seek(0, 0); err != nil {
			return nil, fmt.Errorf("spill: run %s: %w", f.Name(), err)
		}
		runs[i] = NewReader(bufio.NewReaderSize(f, 1<<16), f.Name())
	}
	return &Deduped{m: NewMerger(runs)}, nil
}

// Close removes the runs.
func (s *Sorter) Close() error {
	s.closed = true
	var errs []error
	for _, f := range s.files {
		errs = append(errs, f.Close(), os.Remove(f.Name()))
	}
	s.files, s.recs, s.vals = nil, nil, nil
	return errors.Join(errs...)
}

// Deduped is a Merger that skips a record whose keys equal the last one's.
type Deduped struct {
	m       *Merger
	started bool
	a, b    uint64
}

// Next moves to the next record of new keys.
func (d *Deduped) Next() bool {
	for d.m.Next() {
		r := d.m.Record()
		if d.started && r.A == d.a && r.B == d.b {
			continue
		}
		d.started, d.a, d.b = true, r.A, r.B
		return true
	}
	return false
}

// Record is the current record; its value is valid until the next Next.
func (d *Deduped) Record() Record { return d.m.Record() }

// Err is the first error a run gave.
func (d *Deduped) Err() error { return d.m.Err() }
