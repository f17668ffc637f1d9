package main

import (
	"bufio"
	"context"
	"encoding/gob"
	"fmt"
	"io"
	"iter"
	"os"

	"github.com/simhashdb/simhashdb/engine"
)

// spoolRun is the documents add --bulk sends a served index in one
// InsertBatch call (the client splits it in requests of its BatchLines).
const spoolRun = 1 << 16

// spooled sends docs to insert in runs of n once every one is read, so
// that a read failing part way sends nothing, as a local --bulk stores
// nothing; meanwhile they wait in a temporary file (gob), so that the
// memory is one run's whatever the input's size.
func spooled(ctx context.Context, docs iter.Seq2[engine.Doc, error], n int, insert func(context.Context, []engine.Doc) error) (err error) {
	f, err := os.CreateTemp("", "simhashdb-add-*")
	if err != nil {
		return fmt.Errorf("a file to hold the records until the input ends: %w", err)
	}
	defer func() {
		f.Close()
		os.Remove(f.Name())
	}()
	bw := bufio.NewWriter(f)
	enc := gob.NewEncoder(bw)
	count := 0
	for d, err := range docs {
		if err != nil {
			return err
		}
		if err := enc.Encode(d); err != nil {
			return fmt.Errorf("holding the records in %s until the input ends: %w", f.Name(), err)
		}
		count++
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("holding the records in %s until the input ends: %w", f.Name(), err)
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("reading back %s: %w", f.Name(), err)
	}
	dec := gob.NewDecoder(bufio.NewReader(f))
	run := make([]engine.Doc, 0, min(n, count))
	for i := range count {
		var d engine.Doc
		if err := dec.Decode(&d); err != nil {
			return fmt.Errorf("reading back record %d of %d from %s: %w", i+1, count, f.Name(), err)
		}
		if run = append(run, d); len(run) == n || i == count-1 {
			if err := insert(ctx, run); err != nil {
				return err
			}
			run = run[:0]
		}
	}
	return nil
}
