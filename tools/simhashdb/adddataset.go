package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/simhash"
)

// addDataset stores the records of datasets as documents, committed in
// batches as add --text commits files (or loaded at once with bulk, or one
// commit each with ifNew >= 0). nextID numbers the records without an id
// of their own; 0 (a served index, whose largest id is not known here)
// refuses them by name. A bad record is reported as its place and
// skipped, and ends the command with exit code 1; a text without words is
// reported and skipped.
func addDataset(ctx context.Context, db *addTarget, paths []string, df *datasetFlags, ff *fingerprintFlags, progress string, bulk bool, ifNew int, similarity float64, nextID uint64, stdout, stderr io.Writer) int {
	rd, err := ff.textReader(db.sketchSize)
	if err != nil {
		return fail(stderr, "add", exitUsage, err)
	}
	if err := checkIfNewSimilarity(ifNew, similarity, db.sketchSize); err != nil {
		return fail(stderr, "add", exitUsage, err)
	}
	dr, err := newDatasetReader(paths, df.options(), rd, nextID)
	if err != nil {
		return fail(stderr, "add", exitFailed, err)
	}
	a := &textAdder{ctx: ctx, db: db, bulk: bulk, ifNew: ifNew, similarity: similarity, stdout: stdout, stderr: stderr}
	p := newProgress(progress, stderr, dr.size.Load(), dr.bytesRead, &a.read, &a.durable, &a.rejected)
	defer p.stop()
	stopped := func(err error) int {
		p.stop()
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			err = fmt.Errorf("interrupted: %d records read, %d stored for good; the rest are not: run the command on them again (records with ids of their own are stored again under the same ids)", a.read.Load(), a.durable.Load())
		}
		return fail(stderr, "add", exitFailed, err)
	}
	var stored int64
	// each takes a record: counted, reported if bad, stored otherwise.
	each := func(d datasetDoc, store func(engine.Doc) error) error {
		a.read.Add(1)
		switch {
		case errors.Is(d.err, simhash.ErrEmpty), errors.Is(d.err, simhash.ErrBinary):
			a.empty++
			fmt.Fprintf(stderr, "%s add: %v: not stored\n", programName, d.err)
			a.durable.Add(1)
			return nil
		case d.err != nil:
			fmt.Fprintf(stderr, "%s add: %v\n", programName, d.err)
			a.rejected.Add(1)
			a.code = exitFailed
			return nil
		}
		stored++
		return store(d.doc)
	}
	if bulk {
		docs := func(yield func(engine.Doc, error) bool) {
			for d, err := range dr.Docs(ctx) {
				if err != nil {
					yield(engine.Doc{}, err)
					return
				}
				var stop bool
				if err := each(d, func(doc engine.Doc) error { stop = !yield(doc, nil); return nil }); err != nil || stop {
					return
				}
			}
		}
		if err := db.load(ctx, docs); err != nil {
			return stopped(err)
		}
		a.durable.Store(a.read.Load())
	} else {
		for d, err := range dr.Docs(ctx) {
			if err == nil {
				err = each(d, func(doc engine.Doc) error {
					if ifNew >= 0 {
						return a.insertIfNew(doc, 0)
					}
					if len(a.docs) == 0 {
						a.since = time.Now()
					}
					a.docs = append(a.docs, doc)
					if len(a.docs) >= textBatch || time.Since(a.since) >= textBatchAge {
						return a.commit(p)
					}
					return nil
				})
			}
			if err != nil {
				return stopped(err)
			}
		}
		if err := a.commit(p); err != nil {
			return stopped(err)
		}
	}
	p.stop()
	fmt.Fprintf(stderr, "%s add: %d records: %d stored", programName, a.read.Load(), stored-int64(a.dups))
	if ifNew >= 0 {
		fmt.Fprintf(stderr, ", %d not added as near-duplicates", a.dups)
	}
	if n := a.rejected.Load(); n > 0 {
		fmt.Fprintf(stderr, "; %d bad records skipped", n)
	}
	if a.empty > 0 {
		fmt.Fprintf(stderr, "; %d records without words skipped", a.empty)
	}
	fmt.Fprintln(stderr)
	return a.code
}
