package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/textindex/naming"
)

// addIndex is what add writes to, through the same calls embedded or
// served.
type addIndex interface {
	api.Index
	api.Verifier
	naming.Index
}

// addTarget is the index add writes to.
type addTarget struct {
	addIndex
	sketchSize int // the bytes of each document's sketch, 0 for none
	// load stores what --bulk reads: the engine's Load, which builds the
	// tables of an empty index at once, or a served index's InsertBatch of
	// them all once the input ends (spooled).
	load func(context.Context, iter.Seq2[engine.Doc, error]) error
}

// embeddedTarget is db as add's target.
func embeddedTarget(db *engine.DB) *addTarget {
	return &addTarget{api.Embedded{DB: db}, db.SketchSize(), db.Load}
}

// openAddTarget opens what add writes to: the index in --db, created with
// opts if absent, or the one served at --server; either way ff become the
// index's text options (withIndex). closeIx flushes and closes an index
// opened here. On failure it returns the exit code to stop with.
func openAddTarget(ctx context.Context, d *dbFlags, rf *remoteFlags, cf *createFlags, opts engine.Options, ff *fingerprintFlags, fl *flag.FlagSet, stderr io.Writer) (_ *addTarget, closeIx func(interrupted bool) error, code int, _ error) {
	if !rf.remote() {
		db, code, err := cf.open(ctx, d, opts, ff, fl)
		if err != nil {
			return nil, nil, code, err
		}
		closeIx = func(interrupted bool) error {
			if interrupted {
				fmt.Fprintf(stderr, "%s add: closing %s: what is stored goes to its tables; other commands find it in use until this one exits\n", programName, d.dir)
			}
			return errors.Join(db.Flush(context.Background()), db.Close())
		}
		return embeddedTarget(db), closeIx, exitOK, nil
	}
	c, err := rf.dial()
	if err != nil {
		return nil, nil, exitUsage, err
	}
	st, err := c.Stats(ctx)
	if err != nil && !errors.As(err, new(*engine.StatsError)) {
		return nil, nil, exitFailed, err
	}
	if err := ff.withIndex(ctx, c, st.SketchSize, fl, false); err != nil {
		return nil, nil, usageOr(err), err
	}
	insertAll := func(ctx context.Context, docs iter.Seq2[engine.Doc, error]) error {
		return spooled(ctx, docs, spoolRun, c.InsertBatch)
	}
	return &addTarget{c, st.SketchSize, insertAll}, func(bool) error { return nil }, exitOK, nil
}
