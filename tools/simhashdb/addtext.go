package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/lines"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/textindex"
	"github.com/simhashdb/simhashdb/textindex/naming"
)

// textBatch is how many files add --text fingerprints before it commits
// them together: one fsync a batch, not a file.
const textBatch = 1024

// textBatchAge is the longest a fingerprinted file waits for its commit.
const textBatchAge = time.Second

// textAdder stores files as documents with new ids, in batches.
type textAdder struct {
	ctx   context.Context
	db    *addTarget
	rd    *textindex.Reader
	index string // the index folder, absolute ("" for a served index): never read as input
	bulk  bool   // gather everything, then Load
	ids   *naming.IDs
	ifNew int // >= 0: store only files with no stored document within it
	// similarity: with ifNew, in an index with sketches, a document within
	// ifNew counts only from this estimated similarity on.
	similarity float64
	docs       []engine.Doc
	since      time.Time // when docs got its first document
	stdout     io.Writer
	stderr     io.Writer
	code       int
	read       atomic.Int64
	durable    atomic.Int64
	rejected   atomic.Int64
	bytes      atomic.Int64
	dups       int
	binaries   int // files skipped as binary
	empty      int // files skipped for having no words
}

// addText fingerprints files and folders and stores them, each under the
// id of its path (naming.IDs: a file added again replaces its document, or is
// left as it is if unchanged), committed in batches (each batch durable as
// --sync says before its ids are printed), or loaded at once with bulk.
// With ifNew >= 0 a file is stored only if no stored document lies within
// ifNew of it (the engine's InsertIfNew), else reported.
func addText(ctx context.Context, db *addTarget, dbDir string, paths []string, ff *fingerprintFlags, progress string, bulk bool, ifNew int, similarity float64, stdout, stderr io.Writer) int {
	rd, err := ff.textReader(db.sketchSize)
	if err != nil {
		return fail(stderr, "add", exitUsage, err)
	}
	if err := checkIfNewSimilarity(ifNew, similarity, db.sketchSize); err != nil {
		return fail(stderr, "add", exitUsage, err)
	}
	index := ""
	if dbDir != "" {
		if index, err = filepath.Abs(dbDir); err != nil {
			return fail(stderr, "add", exitFailed, err)
		}
	}
	a := &textAdder{ctx: ctx, db: db, rd: rd, index: index, bulk: bulk, ifNew: ifNew, similarity: similarity, stdout: stdout, stderr: stderr}
	var p *progressReporter
	stopped := func(err error) int {
		if ctx.Err() == nil || !errors.Is(err, context.Canceled) {
			return fail(stderr, "add", exitFailed, err)
		}
		if p != nil {
			p.stop()
		}
		return fail(stderr, "add", exitFailed, fmt.Errorf("interrupted: %d files read, %d stored or left as they were, for good; to finish, run the same command again: the files stored are found unchanged and skipped", a.read.Load(), a.durable.Load()))
	}
	if a.ids, err = naming.New(ctx, db, false); err != nil {
		return stopped(err)
	}
	p = newProgress(progress, stderr, -1, a.bytes.Load, &a.read, &a.durable, &a.rejected)
	defer p.stop()
	for _, arg := range paths {
		if err := a.walk(arg, p); err != nil {
			return stopped(err)
		}
	}
	if err := a.commit(p); err != nil {
		return stopped(err)
	}
	p.stop()
	fmt.Fprintf(stderr, "%s add: %d files: %s", programName, a.read.Load(), a.ids.Summary())
	if ifNew >= 0 {
		fmt.Fprintf(stderr, ", %d not added as near-duplicates", a.dups)
	}
	fmt.Fprint(stderr, skippedSummary(a.binaries, a.empty))
	fmt.Fprintln(stderr)
	return a.code
}

// checkIfNewSimilarity refuses an --if-new --similarity below the lowest
// the index finds pairs for.
func checkIfNewSimilarity(ifNew int, similarity float64, sketchSize int) error {
	if ifNew < 0 {
		return nil
	}
	if err := textindex.CheckSimilarity(sketchSize, similarity); err != nil {
		return fmt.Errorf("--similarity: %w", err)
	}
	return nil
}

// skippedSummary ends add's summary with the files it skipped, if any.
func skippedSummary(binaries, empty int) string {
	var out string
	if binaries > 0 {
		out += fmt.Sprintf("; %d binary files skipped", binaries)
	}
	if empty > 0 {
		out += fmt.Sprintf("; %d files without words skipped", empty)
	}
	return out
}

// bad reports a file that could not be added, and goes on.
func (a *textAdder) bad(path string, err error) {
	fmt.Fprintf(a.stderr, "%s add: %s: %v\n", programName, path, err)
	a.rejected.Add(1)
	a.code = exitFailed
}

// inIndex reports whether path is the index folder or inside it.
func (a *textAdder) inIndex(path string) bool {
	if a.index == "" {
		return false
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return false
	}
	rel, err := filepath.Rel(a.index, abs)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

func (a *textAdder) walk(arg string, p *progressReporter) error {
	if a.inIndex(arg) {
		a.bad(arg, fmt.Errorf("inside the index %s: not read", a.index))
		return nil
	}
	skipIndex := func(path string) bool {
		if a.inIndex(path) {
			fmt.Fprintf(a.stderr, "%s add: %s: the index's own folder, skipped\n", programName, path)
			return true
		}
		return false
	}
	return readFiles(a.ctx, arg, skipIndex, func(path, name string, b []byte) error {
		a.read.Add(1)
		a.bytes.Add(int64(len(b)))
		if len(a.docs) == 0 {
			a.since = time.Now()
		}
		fp, sk, err := a.rd.Read(bytes.NewReader(b))
		switch {
		case errors.Is(err, simhash.ErrBinary):
			a.binaries++
			return nil
		case errors.Is(err, simhash.ErrEmpty):
			a.empty++
			fmt.Fprintf(a.stderr, "%s add: %s: no words: not stored (every such file would be a duplicate of every other)\n", programName, path)
			return nil
		case err != nil:
			a.bad(path, err)
			return nil
		}
		id, what, err := a.ids.ID(a.ctx, name, fp, sk)
		if err != nil {
			return err
		}
		d := engine.Doc{ID: id, Fingerprint: fp, Name: name, Sketch: sk}
		switch {
		case what == naming.Unchanged:
			a.durable.Add(1)
			return nil
		case a.ifNew >= 0:
			return a.insertIfNew(d, what)
		}
		a.docs = append(a.docs, d)
		if !a.bulk && (len(a.docs) >= textBatch || time.Since(a.since) >= textBatchAge) {
			return a.commit(p)
		}
		return nil
	}, a.bad)
}

// insertIfNew stores d unless a stored document lies within a.ifNew (and,
// with sketches, reaches a.similarity), which it reports instead; what is
// how a.ids counted it.
func (a *textAdder) insertIfNew(d engine.Doc, what int) error {
	var ms []engine.Match
	var inserted bool
	var err error
	similar := ""
	if d.Sketch != "" {
		var vs []textindex.Match
		vs, inserted, err = a.db.InsertIfNewSimilar(a.ctx, d, a.ifNew, a.similarity)
		for _, v := range vs {
			ms = append(ms, v.Match)
		}
		if len(vs) > 0 {
			similar = fmt.Sprintf(", similarity %.2f", vs[0].Similarity)
		}
	} else {
		ms, inserted, err = a.db.InsertIfNew(a.ctx, d, a.ifNew)
	}
	if err != nil {
		return err
	}
	a.durable.Add(1)
	if inserted {
		fmt.Fprintf(a.stdout, "%d\t%s\t%s\n", d.ID, simhash.Format(d.Fingerprint), lines.NameField(d.Name))
		return nil
	}
	a.dups++
	if a.ids != nil {
		a.ids.NotStored(what)
	}
	m := ms[0]
	fmt.Fprintf(a.stderr, "%s add: %s: not added: within %d of document %d %s (distance %d%s)\n", programName, d.Name, a.ifNew, m.ID, quoteShort(m.Name), m.Distance, similar)
	return nil
}

// commit stores the documents gathered, then prints their ids.
func (a *textAdder) commit(p *progressReporter) error {
	if len(a.docs) == 0 {
		return nil
	}
	var err error
	if a.bulk {
		err = a.db.load(a.ctx, engine.DocsOf(a.docs))
	} else {
		err = a.db.InsertBatch(a.ctx, a.docs)
	}
	if err != nil {
		return err
	}
	for _, d := range a.docs {
		fmt.Fprintf(a.stdout, "%d\t%s\t%s\n", d.ID, simhash.Format(d.Fingerprint), lines.NameField(d.Name))
	}
	a.durable.Add(int64(len(a.docs)))
	a.docs = a.docs[:0]
	p.update()
	return nil
}
