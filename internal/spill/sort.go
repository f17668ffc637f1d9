package spill

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// Scratch is where a Sort keeps its runs (a bulk load's scratch folder).
type Scratch interface {
	CreateScratch(name string) (io.WriteCloser, error)
	OpenScratch(name string) (io.ReadCloser, error)
}

// Sort is an external sort of documents by id and by posting: each Part
// given to Spill is written as two runs, by id (records (id, 0), the
// fingerprint before the name, so that a repeated id merges in the order
// of the parts) and by posting ((fingerprint, id) and the name). Docs
// merges the first, keeping the last part's document of a repeated id;
// Postings the second, less the postings of the documents Docs dropped.
type Sort struct {
	scratch Scratch
	runs    []run
}

type run struct {
	byID, byPosting string
	// replaced are the ids of this part that a later part holds again.
	replaced *roaring64.Bitmap
}

// NewSort starts a sort whose runs go to s.
func NewSort(s Scratch) *Sort { return &Sort{scratch: s} }

// Runs is how many parts were spilled.
func (s *Sort) Runs() int { return len(s.runs) }

// Spill sorts p and writes it as two runs; p is left in id order.
func (s *Sort) Spill(p *Part) error {
	p.SortByID()
	r := run{byID: fmt.Sprintf("run-%d-by-id", len(s.runs)), byPosting: fmt.Sprintf("run-%d-by-posting", len(s.runs))}
	var v []byte
	err := s.write(r.byID, p.Len(), func(i int) (uint64, uint64, []byte) {
		v = append(binary.LittleEndian.AppendUint64(v[:0], p.FPs[i]), p.Name(i)...)
		return p.IDs[i], 0, v
	})
	if err != nil {
		return err
	}
	keys, ids, order := p.ByPosting()
	err = s.write(r.byPosting, p.Len(), func(i int) (uint64, uint64, []byte) {
		if order == nil {
			return keys[i], ids[i], nil
		}
		return keys[i], ids[i], p.Name(int(order[i]))
	})
	if err != nil {
		return err
	}
	s.runs = append(s.runs, r)
	return nil
}

// write writes the n records that record gives, in order, as the run
// name.
func (s *Sort) write(name string, n int, record func(int) (uint64, uint64, []byte)) error {
	f, err := s.scratch.CreateScratch(name)
	if err != nil {
		return err
	}
	w := NewWriter(f)
	for i := range n {
		if err := w.Append(record(i)); err != nil {
			f.Close()
			return fmt.Errorf("writing the run %s: %w", name, err)
		}
	}
	if err := cmp.Or(w.Close(), f.Close()); err != nil {
		return fmt.Errorf("writing the run %s: %w", name, err)
	}
	return nil
}

// open opens the runs named by name and merges them; done closes them.
func (s *Sort) open(name func(*run) string) (m *Merger, done func(), err error) {
	var files []io.ReadCloser
	done = func() {
		for _, f := range files {
			f.Close()
		}
	}
	readers := make([]*Reader, len(s.runs))
	for i := range s.runs {
		n := name(&s.runs[i])
		f, err := s.scratch.OpenScratch(n)
		if err != nil {
			done()
			return nil, nil, err
		}
		files = append(files, f)
		readers[i] = NewReader(f, n)
	}
	return NewMerger(readers), done, nil
}

// Docs gives each document of the spilled parts to f in id order, of a
// repeated id the last part's, and stops at f's first error. name is
// valid until f returns.
func (s *Sort) Docs(f func(id, fp uint64, name []byte) error) error {
	m, done, err := s.open(func(r *run) string { return r.byID })
	if err != nil {
		return err
	}
	defer done()
	// A document is given when the next has another id: of a repeated
	// id, the runs give the earlier parts' first.
	var id, fp uint64
	var name []byte
	held, heldRun := false, 0
	for m.Next() {
		r := m.Record()
		if len(r.V) < 8 {
			return fmt.Errorf("%w: document %d: a record of %d bytes without its fingerprint", ErrCorrupt, r.A, len(r.V))
		}
		if held && r.A == id {
			s.replaced(heldRun, id)
		} else if held {
			if err := f(id, fp, name); err != nil {
				return err
			}
		}
		id, fp, name = r.A, binary.LittleEndian.Uint64(r.V), append(name[:0], r.V[8:]...)
		held, heldRun = true, m.Run()
	}
	if err := m.Err(); err != nil {
		return err
	}
	if held {
		return f(id, fp, name)
	}
	return nil
}

// replaced notes that run's document id is replaced by a later part's.
func (s *Sort) replaced(run int, id uint64) {
	r := &s.runs[run]
	if r.replaced == nil {
		r.replaced = roaring64.New()
	}
	r.replaced.Add(id)
}

// Postings gives each posting of the documents Docs gave to f in
// (fingerprint, id) order, and stops at f's first error; it must follow
// Docs. name is valid until f returns.
func (s *Sort) Postings(f func(fp, id uint64, name []byte) error) error {
	m, done, err := s.open(func(r *run) string { return r.byPosting })
	if err != nil {
		return err
	}
	defer done()
	for m.Next() {
		r := m.Record()
		if rep := s.runs[m.Run()].replaced; rep != nil && rep.Contains(r.B) {
			continue
		}
		if err := f(r.A, r.B, r.V); err != nil {
			return err
		}
	}
	return m.Err()
}
