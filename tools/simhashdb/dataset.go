package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"iter"
	"os"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/dataset"
	"github.com/simhashdb/simhashdb/textindex"
)

// datasetFlags are the flags of the commands that read datasets (add
// --dataset, dedup).
type datasetFlags struct {
	text, id, name string
	maxRecord      byteSize
}

func (df *datasetFlags) register(fl *flag.FlagSet) {
	fl.StringVar(&df.text, "text-field", "text", "with --dataset: the field (or Parquet column) of each record's text")
	fl.StringVar(&df.id, "id-field", "id", "with --dataset: the field of each record's id, an integer (or a string of digits); a record without one, or with a string of other characters (then its name unless --name-field gives one), is numbered by its position: 2^53 (or the index's largest id + 1, if higher) + its position - 1, counting records from 1 across the files; 2^53 lies above the ids datasets give and those of files; - for none")
	fl.StringVar(&df.name, "name-field", "", "with --dataset: the field of each record's name (a URL, a path), stored with it; default none")
	df.maxRecord = dataset.DefaultMaxRecord
	fl.Var(&df.maxRecord, "max-record", "with --dataset: the longest JSON line read (units allowed: 16MiB); a longer one is reported and skipped")
}

func (df *datasetFlags) options() dataset.Options {
	return dataset.Options{Fields: dataset.Fields{Text: df.text, ID: df.id, Name: df.name}, MaxRecord: int(df.maxRecord)}
}

// datasetDoc is a record of a dataset made a document, or why it is not
// one.
type datasetDoc struct {
	item dataset.Item
	doc  engine.Doc
	// text is the bytes of the record's text.
	text int
	// err is a bad record (*dataset.RecordError) or a text that makes no
	// document (simhash.ErrEmpty, simhash.ErrBinary), named by its place.
	err error
}

// numberedFrom is where add --dataset numbers records without an integer
// id: above the ids records give (JSON's exact integers end at 2^53) and
// the hashed ids of files named by path (textindex/naming's, 53 bits).
const numberedFrom = 1 << 53

// firstNumbered is the id of the first record numbered in an index whose
// next id (engine.DB.NextID) is next.
func firstNumbered(next uint64) uint64 { return max(next, numberedFrom) }

// datasetBatch is how many records a worker takes at a time.
const datasetBatch = 256

// datasetReader reads the records of datasets in order, made documents
// by one worker a core: one goroutine reads the files, the workers parse
// and fingerprint, and Docs gives the documents in the files' order, so
// that the same input always gives the same ids and output. Memory holds
// a few batches a worker.
type datasetReader struct {
	paths []string
	opts  dataset.Options
	rd    *textindex.Reader
	// nextID numbers the records without an id of their own.
	nextID  uint64
	workers int
	// keepItems keeps each record's line (dedup writes it out again).
	keepItems bool
	// size is the bytes of the files, read those read so far (compressed
	// bytes of a compressed file), records the records read.
	size, read, done atomic.Int64
	records          atomic.Int64
}

func newDatasetReader(paths []string, opts dataset.Options, rd *textindex.Reader, nextID uint64) (*datasetReader, error) {
	r := &datasetReader{paths: paths, opts: opts, rd: rd, nextID: nextID, workers: runtime.GOMAXPROCS(0)}
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			return nil, unwrapPathError(err)
		}
		if !fi.Mode().IsRegular() {
			return nil, fmt.Errorf("%s: not a regular file (%s): a dataset is a file of JSON lines or Parquet", p, fi.Mode().Type())
		}
		r.size.Add(fi.Size())
	}
	return r, nil
}

// bytesRead is the bytes of the files read so far, for progress.
func (r *datasetReader) bytesRead() int64 { return r.done.Load() + r.read.Load() }

type docBatch struct {
	docs  []datasetDoc
	first uint64 // the position of the batch's first record
	ready chan struct{}
}

// Docs returns the documents of the files' records in order; an error
// other than a record's ends them.
func (r *datasetReader) Docs(ctx context.Context) iter.Seq2[datasetDoc, error] {
	return func(yield func(datasetDoc, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		work := make(chan *docBatch, r.workers)
		ordered := make(chan *docBatch, 2*r.workers)
		var readErr error
		go func() {
			defer close(work)
			defer close(ordered)
			readErr = r.readItems(ctx, work, ordered)
		}()
		var wg sync.WaitGroup
		for range r.workers {
			wg.Go(func() {
				for b := range work {
					r.makeDocs(b)
					close(b.ready)
				}
			})
		}
		defer wg.Wait()
		defer func() {
			cancel()
			for range ordered { // let the reader end
			}
		}()
		for b := range ordered {
			select {
			case <-b.ready:
			case <-ctx.Done():
				yield(datasetDoc{}, ctx.Err())
				return
			}
			for _, d := range b.docs {
				if !yield(d, nil) {
					return
				}
			}
		}
		if readErr != nil {
			yield(datasetDoc{}, readErr)
		} else if err := ctx.Err(); err != nil {
			yield(datasetDoc{}, err)
		}
	}
}

// readItems reads the files' items into batches, each sent to a worker and,
// in order, to Docs.
func (r *datasetReader) readItems(ctx context.Context, work, ordered chan<- *docBatch) error {
	var pos uint64
	b := &docBatch{ready: make(chan struct{})}
	send := func() bool {
		if len(b.docs) == 0 {
			return true
		}
		select {
		case ordered <- b:
		case <-ctx.Done():
			return false
		}
		select {
		case work <- b:
		case <-ctx.Done():
			return false
		}
		b = &docBatch{first: pos, ready: make(chan struct{})}
		return true
	}
	for _, p := range r.paths {
		f, err := dataset.Open(p)
		if err != nil {
			return unwrapPathError(err)
		}
		r.read.Store(0)
		for it, err := range f.Items(r.opts) {
			if ctx.Err() != nil {
				f.Close()
				return ctx.Err()
			}
			r.read.Store(f.Read())
			var re *dataset.RecordError
			if err != nil && !errors.As(err, &re) {
				f.Close()
				return err
			}
			b.docs = append(b.docs, datasetDoc{item: it, err: err})
			pos++
			r.records.Add(1)
			if len(b.docs) == datasetBatch && !send() {
				f.Close()
				return ctx.Err()
			}
		}
		r.done.Add(f.Read())
		r.read.Store(0)
		f.Close()
	}
	if !send() {
		return ctx.Err()
	}
	return nil
}

// makeDocs parses and fingerprints a batch's records.
func (r *datasetReader) makeDocs(b *docBatch) {
	var sr strings.Reader
	for i := range b.docs {
		d := &b.docs[i]
		if d.err != nil {
			continue
		}
		rec, err := d.item.Record()
		if err != nil {
			d.err = err
			continue
		}
		sr.Reset(rec.Text)
		fp, sk, err := r.rd.Read(&sr)
		if err != nil {
			d.err = &dataset.RecordError{Place: rec.Place, Err: err}
			continue
		}
		d.text = len(rec.Text)
		d.doc = engine.Doc{Fingerprint: fp, Sketch: sk, Name: rec.Name}
		switch {
		case rec.HasID:
			d.doc.ID = rec.ID
		case r.nextID == 0:
			d.err = &dataset.RecordError{Place: rec.Place, Err: fmt.Errorf("no integer id (--id-field %s): a served index numbers no records; give each one, or add with --db", cmp.Or(r.opts.Fields.ID, "id"))}
			continue
		default:
			d.doc.ID = r.nextID + b.first + uint64(i)
			if d.doc.Name == "" {
				d.doc.Name = cmp.Or(rec.Key, rec.Place)
			}
		}
		if !r.keepItems {
			d.item.Line = nil
		}
	}
}
