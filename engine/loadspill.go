package engine

import (
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/spill"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/engine/internal/tasks"
)

// A load larger than memory is an external sort. Each part of the
// documents that fills loadMemory is sorted twice and written as two runs
// (spill): by id (id, fingerprint and stored name) and by posting (fingerprint,
// id, stored name). Then fromRuns merges the runs by id into the
// documents' sstables, keeping the last part's document of a repeated id
// and the fingerprints in id order for the tables, and the runs by
// posting into the postings' sstables, less the postings of documents a
// later part replaced. The tables are built from the fingerprints as a
// load in memory builds them.

// loadRun is one part of a load sorted on disk: its two runs' names.
type loadRun struct {
	byID, byPosting string
	// replaced are the ids of this part that a later part holds again.
	replaced *roaring64.Bitmap
}

// spill sorts p, a part of a load, and writes it as two runs.
func (j *loadJob) spill(p *loadPart) error {
	p.sortByID()
	// Room for this part's runs, and for the index that every part so far
	// becomes.
	runs := recordsSize(p) // about both runs' bytes
	j.spilled += runs
	j.n += int64(p.len())
	if err := j.out.CheckRoom(runs + j.spilled + tablesSize(j.n, len(j.tables))); err != nil {
		return err
	}
	r := loadRun{byID: fmt.Sprintf("run-%d-by-id", len(j.runs)), byPosting: fmt.Sprintf("run-%d-by-posting", len(j.runs))}
	// By id, each record (id, 0) with the fingerprint before the name, so
	// that the runs merge a repeated id in the order of the parts.
	var v []byte
	err := j.writeRun(r.byID, p.len(), func(i int) (uint64, uint64, []byte) {
		v = append(binary.LittleEndian.AppendUint64(v[:0], p.fps[i]), p.name(i)...)
		return p.ids[i], 0, v
	})
	if err != nil {
		return err
	}
	keys, ids, order := p.byPosting()
	err = j.writeRun(r.byPosting, p.len(), func(i int) (uint64, uint64, []byte) {
		if order == nil {
			return keys[i], ids[i], nil
		}
		return keys[i], ids[i], p.name(int(order[i]))
	})
	if err != nil {
		return err
	}
	j.runs = append(j.runs, r)
	return nil
}

// writeRun writes the n records that record gives, in order, as the run
// name.
func (j *loadJob) writeRun(name string, n int, record func(int) (uint64, uint64, []byte)) error {
	f, err := j.out.CreateScratch(name)
	if err != nil {
		return err
	}
	w := spill.NewWriter(f)
	for i := range n {
		if err := w.Append(record(i)); err != nil {
			f.Close()
			return store.DiskErr("writing a bulk load's run "+name, err)
		}
	}
	if err := cmp.Or(w.Close(), f.Close()); err != nil {
		return store.DiskErr("writing a bulk load's run "+name, err)
	}
	return nil
}

// fromRuns finishes a load sorted on disk: the runs merged into the
// documents and then the postings, the tables built meanwhile.
func (j *loadJob) fromRuns(ctx context.Context) error {
	procs := runtime.GOMAXPROCS(0)
	j.pool = tasks.New(ctx, procs)
	j.pool.Run("loading documents", func() error {
		if err := j.mergeDocs(ctx); err != nil {
			return err
		}
		j.pool.Run("loading postings", func() error { return j.mergePostings(ctx) })
		j.buildTables(procs)
		return nil
	})
	return j.finish(ctx)
}

// openRuns opens the runs named by name and merges them.
func (j *loadJob) openRuns(name func(*loadRun) string) (*spill.Merger, func(), error) {
	var files []io.ReadCloser
	closeAll := func() {
		for _, f := range files {
			f.Close()
		}
	}
	readers := make([]*spill.Reader, len(j.runs))
	for i := range j.runs {
		n := name(&j.runs[i])
		f, err := j.out.OpenScratch(n)
		if err != nil {
			closeAll()
			return nil, nil, err
		}
		files = append(files, f)
		readers[i] = spill.NewReader(f, n)
	}
	return spill.NewMerger(readers), closeAll, nil
}

// runErr is the error of a merge of a load's runs.
func runErr(err error) error {
	if errors.Is(err, spill.ErrCorrupt) {
		return fmt.Errorf("%w: a bulk load's scratch: %w", ErrCorrupt, err)
	}
	return store.DiskErr("reading a bulk load's runs", err)
}

// mergeDocs writes the documents from the runs by id, the last part's
// document of a repeated id, and the fingerprints in id order (j.all).
func (j *loadJob) mergeDocs(ctx context.Context) error {
	m, closeRuns, err := j.openRuns(func(r *loadRun) string { return r.byID })
	if err != nil {
		return err
	}
	defer closeRuns()
	perSST := j.db.opts.knobs.docsPerSST
	if perSST <= 0 {
		perSST = 1 << 20
	}
	j.all = make([]uint64, 0, j.n)
	var sw *store.SSTable
	defer func() {
		if sw != nil {
			sw.Close()
		}
	}()
	var inFile int
	var kb, vb []byte
	// A document is written when the next has another id: of a repeated
	// id, the runs give the earlier parts' first.
	var held spill.Record
	var heldRun int
	var fp uint64
	var name []byte
	have := false
	write := func() error {
		if sw == nil || inFile == perSST {
			if sw != nil {
				err := sw.Close()
				if sw = nil; err != nil {
					return err
				}
			}
			var err error
			if sw, err = j.newSST(fmt.Sprintf("docs-%d", len(j.all))); err != nil {
				return err
			}
			inFile = 0
		}
		kb, vb = format.AppendDocKey(kb[:0], held.A), format.AppendDocValue(vb[:0], fp, docValueName(j.db, name))
		j.all = append(j.all, fp)
		inFile++
		return sw.Set(kb, vb)
	}
	for m.Next() {
		r := m.Record()
		if len(r.V) < 8 {
			return runErr(fmt.Errorf("%w: document %d: a record of %d bytes without its fingerprint", spill.ErrCorrupt, r.A, len(r.V)))
		}
		if have && r.A == held.A {
			j.replaced(heldRun, held.A)
		} else if have {
			if err := write(); err != nil {
				return err
			}
			if len(j.all)%4096 == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
		}
		held, heldRun, have = r, m.Run(), true
		fp = binary.LittleEndian.Uint64(r.V)
		name = append(name[:0], r.V[8:]...)
	}
	if err := m.Err(); err != nil {
		return runErr(err)
	}
	if have {
		if err := write(); err != nil {
			return err
		}
	}
	j.n = int64(len(j.all))
	if sw == nil {
		return nil
	}
	err = sw.Close()
	sw = nil
	return err
}

// replaced notes that run's document id is replaced by a later part's.
func (j *loadJob) replaced(run int, id uint64) {
	r := &j.runs[run]
	if r.replaced == nil {
		r.replaced = roaring64.New()
	}
	r.replaced.Add(id)
}

// mergePostings writes the postings from the runs by posting, less those
// of replaced documents, a fingerprint's postings in one file.
func (j *loadJob) mergePostings(ctx context.Context) error {
	m, closeRuns, err := j.openRuns(func(r *loadRun) string { return r.byPosting })
	if err != nil {
		return err
	}
	defer closeRuns()
	perSST := j.db.postingsPerSST()
	var sw *store.SSTable
	defer func() {
		if sw != nil {
			sw.Close()
		}
	}()
	var inFile, written int
	var last uint64
	var kb []byte
	for m.Next() {
		r := m.Record()
		if rep := j.runs[m.Run()].replaced; rep != nil && rep.Contains(r.B) {
			continue
		}
		if sw == nil || inFile >= perSST && r.A != last {
			if sw != nil {
				err := sw.Close()
				if sw = nil; err != nil {
					return err
				}
			}
			var err error
			if sw, err = j.newSST(fmt.Sprintf("postings-%d", written)); err != nil {
				return err
			}
			inFile = 0
		}
		kb = format.AppendPostingKey(kb[:0], r.A, r.B)
		if err := sw.Set(kb, r.V); err != nil {
			return err
		}
		last = r.A
		inFile++
		if written++; written%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
	}
	if err := m.Err(); err != nil {
		return runErr(err)
	}
	if sw == nil {
		return nil
	}
	err = sw.Close()
	sw = nil
	return err
}
