package main

import (
	"bufio"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/lines"
	"github.com/simhashdb/simhashdb/internal/memhold"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/textindex"
	"github.com/simhashdb/simhashdb/textindex/naming"
)

// dbFlags are the flags of every command that opens an index.
type dbFlags struct {
	dir      string
	k        int
	recovery string
}

func (d *dbFlags) register(fl *flag.FlagSet, kHelp string) {
	fl.StringVar(&d.dir, "db", "", "the index folder (required)")
	fl.IntVar(&d.k, "k", -1, kHelp)
	// -1 means "not given", which kHelp explains: the flag package would
	// print "(default -1)" beside it.
	fl.Lookup("k").DefValue = "0"
	fl.StringVar(&d.recovery, "wal-recovery", "tail", "what opening does with a damaged record of the write-ahead log:\n"+
		"tail: discard a damaged last record (a warning, a copy kept, check fails until the copy is removed), refuse damage with records after it;\n"+
		"strict: refuse any damage; point-in-time: discard from the first damage on (a torn tail, an unfinished write, is skipped in every mode)")
}

// check rejects a missing --db, and a --k given on the command line that
// no index answers (-1, the flag's default, means "not given"): usage
// errors, found before anything is opened.
func (d *dbFlags) check(fl *flag.FlagSet) error {
	if d.dir == "" {
		return errors.New("--db DIR is required")
	}
	if d.recovery != "" {
		if _, err := engine.ParseWALRecovery(d.recovery); err != nil {
			return fmt.Errorf("--wal-recovery: %w", err)
		}
	}
	given := false
	fl.Visit(func(f *flag.Flag) { given = given || f.Name == "k" })
	if given && (d.k < 0 || d.k > maxK) {
		return fmt.Errorf("--k %d: want a distance of 0 to %d", d.k, maxK)
	}
	return nil
}

// noIndex says that dir holds no index, and what would make one there.
func noIndex(dir string) error {
	info, err := os.Stat(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%s: no such folder (create an index there with 'simhashdb add --db %s')", dir, dir)
	case err != nil:
		return fmt.Errorf("%s: %w", dir, unwrapPathError(err))
	case !info.IsDir():
		return fmt.Errorf("%s is a file, not an index folder", dir)
	}
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("%s: no index there, and it holds other files (such as %q): an index is created only in a new or empty folder", dir, ents[0].Name())
	}
	return fmt.Errorf("%s: no index there (create one with 'simhashdb add --db %s')", dir, dir)
}

// maxK is the largest K an index can be built for.
const maxK = 16

// open opens the index, which must exist unless create.
func (d *dbFlags) open(opts engine.Options, create bool) (*engine.DB, error) {
	if d.dir == "" {
		return nil, errors.New("--db DIR is required")
	}
	if !create {
		if ok, err := engine.Exists(d.dir); err != nil || !ok {
			return nil, noIndex(d.dir)
		}
	}
	opts.Logger = quietLogger()
	if d.recovery != "" {
		r, err := engine.ParseWALRecovery(d.recovery)
		if err != nil {
			return nil, fmt.Errorf("--wal-recovery: %w", err)
		}
		opts.WALRecovery = r
	}
	db, err := engine.Open(d.dir, opts)
	if errors.Is(err, engine.ErrLocked) {
		return nil, fmt.Errorf("%s: the index is in use by another process (one process opens an index at a time; to share it, run 'simhashdb serve --db %s' and give --server to any command that takes --db)", d.dir, d.dir)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", d.dir, err)
	}
	memhold.HoldProcess() // after Open: the index's defaults read the memory limit first
	return db, nil
}

// quietLogger passes on the engine's warnings and errors only: a command's
// output is its answer.
func quietLogger() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// detailed returns the first error in err's tree that formats its own
// details (Pebble's: a stack trace and the error's parts), or nil.
func detailed(err error) error {
	if _, ok := err.(fmt.Formatter); ok {
		return err
	}
	switch u := err.(type) {
	case interface{ Unwrap() error }:
		if e := u.Unwrap(); e != nil {
			return detailed(e)
		}
	case interface{ Unwrap() []error }:
		for _, e := range u.Unwrap() {
			if d := detailed(e); d != nil {
				return d
			}
		}
	}
	return nil
}

// registerHex registers --hex, which reads fingerprints as bare
// hexadecimal.
func registerHex(fl *flag.FlagSet) *bool {
	return fl.Bool("hex", false, "read fingerprints as hexadecimal without 0x (\"0123456789012345\" is then hex); without it, digits are decimal and hex needs 0x")
}

// signalContext is cancelled by Ctrl-C or SIGTERM, so a long command stops
// cleanly (its acknowledged writes are durable); a second signal exits at
// once, with the shell's code for it (130).
func signalContext() (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case <-sigs:
			cancel()
			fmt.Fprintf(os.Stderr, "%s: stopping; interrupt again to quit at once\n", programName)
		case <-done:
			return
		}
		select {
		case <-sigs:
			fmt.Fprintf(os.Stderr, "%s: quit\n", programName)
			os.Exit(130)
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		cancel()
	}
}

// fail prints "simhashdb CMD: err" and returns code. The error is one
// line: what a library below adds on further lines (Pebble's stack traces
// and error details) is printed only with SIMHASHDB_VERBOSE=1.
func fail(stderr io.Writer, cmd string, code int, err error) int {
	msg, _, more := strings.Cut(err.Error(), "\n")
	fmt.Fprintf(stderr, "%s %s: %s\n", programName, cmd, msg)
	if more && os.Getenv("SIMHASHDB_VERBOSE") != "" {
		if e := detailed(err); e != nil {
			fmt.Fprintf(stderr, "%+v\n", e)
		}
	}
	return code
}

// record is one parsed input line of add.
type record struct {
	doc  engine.Doc
	line int
	err  error
	skip bool // stored as it is already: nothing to write
}

// parseRecord reads "<id> <fingerprint> [name]", or a line of "simhashdb
// fingerprint" ("<0x fingerprint><TAB><path>"), a document named by its
// path, which ids gives its id (nil: such lines are refused). unchanged:
// the document is stored as it is already.
func parseRecord(ctx context.Context, syn lines.Syntax, line string, ids *naming.IDs) (d engine.Doc, unchanged bool, err error) {
	if syn.Sketch > 0 {
		if _, _, ok := syn.Named(line); ok {
			return engine.Doc{}, false, errors.New("a line of 'simhashdb fingerprint' carries no sketch, and this index keeps a sketch of each document's text: add the files with add --text")
		}
		id, fp, sk, name, err := syn.SketchedRecord(line)
		if err != nil {
			return engine.Doc{}, false, err
		}
		if len(name) > engine.MaxName {
			return engine.Doc{}, false, fmt.Errorf("name of %d bytes, at most %d", len(name), engine.MaxName)
		}
		return engine.Doc{ID: id, Fingerprint: fp, Name: name, Sketch: sk}, false, nil
	}
	if fp, name, ok := syn.Named(line); ok {
		if ids == nil {
			return engine.Doc{}, false, errors.New("a line of 'simhashdb fingerprint' has no id, and with --server the ids are the sender's: add it to a local --db, or write <id> <fingerprint> [name]")
		}
		if len(name) > engine.MaxName {
			return engine.Doc{}, false, fmt.Errorf("name of %d bytes, at most %d", len(name), engine.MaxName)
		}
		id, what, err := ids.ID(ctx, name, fp, "")
		if err != nil {
			return engine.Doc{}, false, err
		}
		return engine.Doc{ID: id, Fingerprint: fp, Name: name}, what == naming.Unchanged, nil
	}
	id, fp, name, err := syn.Record(line)
	if err != nil {
		return engine.Doc{}, false, err
	}
	if len(name) > engine.MaxName {
		return engine.Doc{}, false, fmt.Errorf("name of %d bytes, at most %d", len(name), engine.MaxName)
	}
	return engine.Doc{ID: id, Fingerprint: fp, Name: name}, false, nil
}

func runAdd(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := newFlagSet("add", "--db DIR [flags] [--input FILE|-] | --db DIR --text PATH...",
		"  printf '1 0x0123456789abcdef https://example.com/a\\n2 81985529216486895\\n' | simhashdb add --db idx\n"+
			"  simhashdb add --db idx --text docs/          # fingerprint every file, print <id> <fp> <path>\n\n"+
			"Input lines: <id> <fingerprint> [name]; the fingerprint in decimal (any number of digits)\n"+
			"or 0x hex (bare hex with --hex), the name (a URL, a path) is the rest of the line. Lines\n"+
			"of 'simhashdb fingerprint' (<0x fingerprint><TAB><path>) are read too: each gets the next\n"+
			"id after the index's largest. Blank lines and lines starting with # are skipped.\n"+
			"A bad line is reported as FILE:LINE and skipped; the others are stored (exit code 1).\n\n"+
			"With --progress json, stderr gets a JSON line whenever more records are durable and at\n"+
			"least every second: {\"read\":N,\"durable\":D,\"rejected\":R,\"elapsed_s\":S,\"rate\":X}.\n"+
			"durable counts input records from the first one whose fate is final and would survive\n"+
			"a kill -9 of this process (and, with --sync always, a power loss): stored, or rejected.\n\n"+
			"With --text: "+walkHelp, stderr)
	var d dbFlags
	d.register(fl, "the largest distance the index answers, fixed at creation (default 3)")
	var cf createFlags
	cf.register(fl)
	input := fl.String("input", "-", "records to add, one per line (- is standard input)")
	text := fl.Bool("text", false, "fingerprint the files and folders given as arguments instead of reading records")
	ds := fl.Bool("dataset", false, "read the datasets given as arguments, each record's text a document: JSON lines (plain, gzip or zstd) or Parquet, told by their first bytes; see --text-field, --id-field, --name-field")
	var df datasetFlags
	df.register(fl)
	minSimilarity := fl.Float64("min-similarity", textindex.DefaultSimilarity, "with --text or --dataset into a new index: the lowest similarity it will be asked for, 0.5 to 1; the index keeps band keys of each document's text for it (more for a lower one), and refuses to be asked below it")
	progress := fl.String("progress", "auto", "progress on stderr: auto (a bar on a terminal), bar, json or none")
	bulk := fl.Bool("bulk", false, "into an empty index: build the tables at once from all the records (fastest; a load larger than a quarter of memory is sorted on disk; durable only at the end; with --server, stored at the end in batches)")
	hex := registerHex(fl)
	prune := fl.Bool("prune", false, "with --text: also remove the documents named by a path under the folders given whose file is gone (as a sync tool does)")
	dryRun := fl.Bool("dry-run", false, "with --prune: list what it would remove, and change nothing (no file is added either)")
	ifNew := fl.Int("if-new", -1, "store a record or file only if no stored document lies within this distance of it (the crawler's decision, one commit each); the others are reported on stderr")
	fl.Lookup("if-new").DefValue = "off"
	sketches := fl.Bool("sketches", true, "with --text into a new index: keep a 32-byte sketch of each file's text beside its fingerprint, fingerprint single words and build for distance 6 (unless --shingle or --k say otherwise), so that queries, find-all and find-clusters report near-duplicates verified by their text's similarity (--similarity); false builds the fingerprint-only index of before")
	similarity := similarityFlag(fl)
	var ff fingerprintFlags
	ff.register(fl)
	var rf remoteFlags
	rf.register(fl)
	if code := parseFlags(fl, args); code >= 0 {
		return code
	}
	if err := checkTarget(&d, &rf, fl); err != nil {
		return fail(stderr, "add", exitUsage, err)
	}
	if flagGiven(fl, "similarity") && (!*text || *ifNew < 0) {
		return fail(stderr, "add", exitUsage, errors.New("--similarity goes with --text and --if-new: the near-duplicates that keep a file out"))
	}
	if *ifNew != -1 && (*ifNew < 0 || *ifNew > maxK || *bulk) {
		return fail(stderr, "add", exitUsage, fmt.Errorf("--if-new %d: want a distance of 0 to %d, without --bulk", *ifNew, maxK))
	}
	if *ds && *text {
		return fail(stderr, "add", exitUsage, errors.New("--text reads files, --dataset records: give one"))
	}
	if (*prune || *dryRun) && !*text {
		return fail(stderr, "add", exitUsage, errors.New("--prune and --dry-run go with --text"))
	}
	if *dryRun && !*prune {
		return fail(stderr, "add", exitUsage, errors.New("--dry-run lists what --prune would remove: give --prune too"))
	}
	if rf.remote() {
		// What only an index opened here takes: the server opened its
		// index, and reads it with the flags it was started with.
		var local []string
		fl.Visit(func(f *flag.Flag) {
			switch f.Name {
			case "k", "expect", "design", "sync", "sketches", "wal-recovery", "cache-size", "memtable-size", "reads", "direct-reads":
				local = append(local, "--"+f.Name)
			}
		})
		if len(local) > 0 {
			return fail(stderr, "add", exitUsage, fmt.Errorf("%s: with --server, the server opened the index as it was started to: give them to 'simhashdb serve', or add with --db", strings.Join(local, " ")))
		}
	}
	opts, err := cf.options(&d)
	if err != nil {
		return fail(stderr, "add", exitUsage, err)
	}
	switch *progress {
	case "auto":
		*progress = "none"
		if isTerminal(stderr) {
			*progress = "bar"
		}
	case "bar", "json", "none":
	default:
		return fail(stderr, "add", exitUsage, fmt.Errorf("--progress %q: want auto, bar, json or none", *progress))
	}
	if textual := *text || *ds; textual == (fl.NArg() == 0) {
		switch {
		case *text:
			return fail(stderr, "add", exitUsage, errors.New("--text needs PATH arguments"))
		case *ds:
			return fail(stderr, "add", exitUsage, errors.New("--dataset needs FILE arguments"))
		}
		return fail(stderr, "add", exitUsage, fmt.Errorf("unexpected arguments %q (records come from --input; files need --text, datasets --dataset)", fl.Args()))
	}
	if flagGiven(fl, "min-similarity") && !*text && !*ds {
		return fail(stderr, "add", exitUsage, errors.New("--min-similarity goes with --text or --dataset, into a new index"))
	}
	ctx, stop := signalContext()
	defer stop()
	var in *bufio.Reader
	var inName string
	var inSize int64
	var header *exportHeader
	if !*text && !*ds {
		r, name, size, closeIn, err := openInput(ctx, *input, stdin)
		if err != nil {
			return fail(stderr, "add", exitFailed, fmt.Errorf("%s: %w", name, err))
		}
		defer closeIn()
		in, inName, inSize = bufio.NewReaderSize(r, 64<<10), name, size
		if header, err = peekExportHeader(in, name); err != nil {
			return fail(stderr, "add", exitFailed, err)
		}
		if err := header.apply(fl); err != nil {
			return fail(stderr, "add", exitUsage, err)
		}
	}
	if !rf.remote() && (((*text || *ds) && *sketches) || header != nil && header.Sketch > 0) {
		var code int
		if opts, code, err = textOptions(opts, &d, &cf, &ff, fl, *text || *ds, *minSimilarity); err != nil {
			return fail(stderr, "add", code, err)
		}
		if header != nil && header.Sketch > 0 && opts.SketchSize > 0 {
			// Into a new index (textOptions sized its records), an export's
			// records keep the size they were made with: a sketch alone
			// from an index before band keys, or a layout's.
			opts.SketchSize = header.Sketch
		}
	}
	ix, closeIx, code, err := openAddTarget(ctx, &d, &rf, &cf, opts, &ff, fl, stderr)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			return fail(stderr, "add", exitFailed, fmt.Errorf("interrupted while opening %s: nothing from the input is stored; run the same command again", cmp.Or(d.dir, rf.String())))
		}
		if header != nil && header.Fingerprint != nil && errors.Is(err, errConflict) {
			err = fmt.Errorf("the input was exported from an index with %s, %s holds one with other options: %w", schemaString(*header.Fingerprint), cmp.Or(d.dir, rf.String()), err)
		}
		return fail(stderr, "add", code, err)
	}
	switch {
	case *text && *dryRun:
		code = pruneGone(ctx, ix, fl.Args(), true, stdout, stderr)
	case *text:
		code = addText(ctx, ix, d.dir, fl.Args(), &ff, *progress, *bulk, *ifNew, *similarity, stdout, stderr)
		if *prune && code != exitUsage && ctx.Err() == nil {
			code = max(code, pruneGone(ctx, ix, fl.Args(), false, stdout, stderr))
		}
	case *ds:
		var next uint64
		if e, ok := ix.addIndex.(api.Embedded); ok {
			if next, err = e.NextID(ctx); err != nil {
				return fail(stderr, "add", exitFailed, err)
			}
			next = firstNumbered(next)
		}
		code = addDataset(ctx, ix, fl.Args(), &df, &ff, *progress, *bulk, *ifNew, *similarity, next, stdout, stderr)
	default:
		code = addRecords(ctx, ix, lines.Syntax{Hex: *hex, Sketch: ix.sketchSize}, in, inName, inSize, stderr, *progress, *bulk, *ifNew)
	}
	if err := closeIx(ctx.Err() != nil); err != nil {
		code = max(code, fail(stderr, "add", exitFailed, err))
	}
	return code
}

// textOptions returns the options of an index that keeps sketches of its
// documents' text (package textindex): for a new index, built for
// distance textindex.K unless --k says otherwise, and, when its documents
// come from files (text), fingerprinting single words unless --shingle
// says otherwise; an existing index keeps what it has. On failure it
// returns the exit code to stop with.
func textOptions(opts engine.Options, d *dbFlags, cf *createFlags, ff *fingerprintFlags, fl *flag.FlagSet, text bool, minSimilarity float64) (engine.Options, int, error) {
	existed, err := engine.Exists(d.dir)
	if err != nil || existed {
		return opts, exitFailed, err
	}
	// Candidates for recall, the sketch for precision.
	if d.k < 0 {
		d.k = textindex.K
	}
	if text && !flagGiven(fl, "shingle") {
		ff.shingle = textindex.Shingle
	}
	if opts, err = cf.options(d); err != nil {
		return opts, exitUsage, err
	}
	if opts, err = textindex.OptionsAt(opts, minSimilarity); err != nil {
		return opts, exitUsage, fmt.Errorf("--min-similarity: %w", err)
	}
	return opts, exitOK, nil
}

// addRecords streams records into db: a parser goroutine reads lines while
// this one commits whatever has been parsed as one batch, so batches grow
// with the input's speed and every commit moves "durable" forward.
func addRecords(ctx context.Context, db *addTarget, syn lines.Syntax, r io.Reader, name string, size int64, stderr io.Writer, progress string, bulk bool, ifNew int) int {
	// Built at the first line of "simhashdb fingerprint", if any.
	var ids *naming.IDs
	idsFor := func() (*naming.IDs, error) {
		if ids == nil {
			var err error
			ids, err = naming.New(ctx, db, false)
			return ids, err
		}
		return ids, nil
	}
	cr := &countingReader{r: r}
	recs := make(chan record, 1<<14)
	scanErr := make(chan error, 1)
	// The reader stops early when a bulk load does.
	readCtx, stopReading := context.WithCancel(ctx)
	defer stopReading()
	go func() {
		ctx := readCtx
		defer close(recs)
		scanErr <- scanLines(cr, name, func(n int, line string, tooLong error) error {
			if t := strings.TrimSpace(line); tooLong == nil && (t == "" || t[0] == '#') {
				return nil
			}
			var doc engine.Doc
			var unchanged bool
			var err error
			if _, _, named := syn.Named(line); named {
				var p *naming.IDs
				if p, err = idsFor(); err != nil {
					return err
				}
				doc, unchanged, err = parseRecord(ctx, syn, line, p)
			} else {
				doc, _, err = parseRecord(ctx, syn, line, nil)
			}
			if tooLong != nil {
				err = tooLong
			}
			select {
			case recs <- record{doc, n, err, unchanged && err == nil}:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	var read, durable, rejected atomic.Int64
	p := newProgress(progress, stderr, size, func() int64 { return cr.n }, &read, &durable, &rejected)
	defer p.stop()
	code := exitOK
	reject := func(rc record) {
		fmt.Fprintf(stderr, "%s add: %s:%d: %v\n", programName, name, rc.line, rc.err)
		rejected.Add(1)
		code = exitFailed
	}
	var docs []engine.Doc
	if bulk {
		// The records go to the load as they are read: a load larger than
		// memory sorts on disk.
		var scanned error
		readAll := false
		good := func(yield func(engine.Doc, error) bool) {
			for rc := range recs {
				read.Add(1)
				if rc.err != nil {
					reject(rc)
					continue
				}
				if !rc.skip && !yield(rc.doc, nil) {
					return
				}
			}
			// A read that failed part way stores nothing.
			readAll, scanned = true, <-scanErr
			if scanned != nil {
				yield(engine.Doc{}, scanned)
			}
		}
		err := db.load(ctx, good)
		if !readAll {
			stopReading()
			for range recs {
			}
			<-scanErr
		}
		if scanned != nil {
			return fail(stderr, "add", exitFailed, scanned)
		}
		if err != nil {
			return fail(stderr, "add", exitFailed, err)
		}
		durable.Store(read.Load())
		p.update()
		return code
	}
	var pending int64 // rejected records since the last commit
	lastLine := 0     // the input line of the last record whose fate is durable
	dups := 0         // records not added by --if-new
	stopped := func(err error) int {
		if ctx.Err() == nil || !errors.Is(err, context.Canceled) {
			return fail(stderr, "add", exitFailed, err)
		}
		p.stop()
		how := "run the same command again: a record stored again replaces itself"
		if name != "<stdin>" {
			how += fmt.Sprintf(" (tail -n +%d %s | simhashdb add ... reads the rest)", lastLine+1, name)
		}
		return fail(stderr, "add", exitFailed, fmt.Errorf("interrupted: %d records read, %d stored or rejected for good, through line %d of %s; to finish, %s", read.Load(), durable.Load(), lastLine, name, how))
	}
	for rc := range recs {
		docs, pending = docs[:0], 0
		line := 0
		for more := true; more; {
			read.Add(1)
			line = rc.line
			switch {
			case rc.err != nil:
				reject(rc)
				pending++
			case rc.skip:
				pending++
			default:
				docs = append(docs, rc.doc)
			}
			if len(docs) >= 1<<14 {
				break
			}
			select {
			case rc, more = <-recs:
			default:
				more = false
			}
		}
		if ifNew >= 0 {
			for _, d := range docs {
				ms, inserted, err := db.InsertIfNew(ctx, d, ifNew)
				if err != nil {
					return stopped(err)
				}
				if !inserted {
					dups++
					fmt.Fprintf(stderr, "%s add: document %d: not added: within %d of document %d %s (distance %d)\n", programName, d.ID, ifNew, ms[0].ID, quoteShort(ms[0].Name), ms[0].Distance)
				}
			}
		} else if len(docs) > 0 {
			if err := db.InsertBatch(ctx, docs); err != nil {
				return stopped(err)
			}
		}
		durable.Add(int64(len(docs)) + pending)
		lastLine = line
		p.update()
	}
	if err := <-scanErr; err != nil {
		return stopped(err)
	}
	p.update()
	if ids != nil {
		p.stop()
		fmt.Fprintf(stderr, "%s add: documents named by a path: %s\n", programName, ids.Summary())
	}
	if ifNew >= 0 {
		p.stop()
		fmt.Fprintf(stderr, "%s add: %d records not added as near-duplicates (--if-new %d)\n", programName, dups, ifNew)
	}
	return code
}

// createFlags are the flags of the commands that open an index to write
// and create it if absent (add, serve).
type createFlags struct {
	expect int64
	design string
	sync   string
	// cache and memtable bound the index's memory (0: the engine's
	// defaults).
	cache, memtable byteSize
	reads           string // engine.Options.Reads
	direct          bool   // --direct-reads, the former --reads direct
	// created is set by open: the index did not exist before.
	created bool
}

func (c *createFlags) register(fl *flag.FlagSet) {
	fl.Int64Var(&c.expect, "expect", 0, "expected number of fingerprints, which sizes the table design (default 2^24); only at creation")
	fl.StringVar(&c.design, "design", "memory", "the table design, only at creation: memory (queries cheapest when the tables are cached) or disk (fewest disk reads a query, for an index much larger than its cache: fewer tables up to about 100M fingerprints at k = 3)")
	fl.StringVar(&c.sync, "sync", "always", "durability of each write: always (fsync), interval (fsync every 100ms) or none")
	fl.Var(&c.cache, "cache-size", "the cache of table blocks, postings and Pebble's blocks, in bytes (units allowed: 256MiB); default a quarter of the memory the process may use (GOMEMLIMIT, its cgroup's limit or the machine's), less where the index's memtables and directories need it to stay within half of it")
	fl.StringVar(&c.reads, "reads", "auto", "how the stored blocks no cache holds are read: auto (direct for an index more than 1.2 times the memory the process may use when it is opened, else buffered), buffered (through the page cache, and io_uring on Linux), direct (what the page cache does not hold with O_DIRECT, through io_uring: for an index much larger than the memory a cold query takes less of the processor, and the page cache is left to others) or blocking (pread)")
	fl.BoolVar(&c.direct, "direct-reads", false, "deprecated: --reads direct")
	fl.Var(&c.memtable, "memtable-size", "the recent writes held in memory before a flush, in bytes; writes wait while twice that is unflushed; default 64MiB, growing with the index (5 bytes a fingerprint, up to 1GiB), and no more than a sixteenth of the memory the process may use")
}

// options checks the flags (usage errors) and returns the index's options.
func (c *createFlags) options(d *dbFlags) (engine.Options, error) {
	mode, err := engine.ParseSyncMode(c.sync)
	if err != nil {
		return engine.Options{}, fmt.Errorf("--sync: %w", err)
	}
	if d.k == 0 {
		return engine.Options{}, fmt.Errorf("--k 0: an index is built for a K of 1 to %d (queries may then ask for 0)", maxK)
	}
	if c.expect < 0 {
		return engine.Options{}, fmt.Errorf("--expect %d: want a number of fingerprints, 0 for the default", c.expect)
	}
	if c.memtable != 0 && c.memtable < 1<<10 {
		return engine.Options{}, fmt.Errorf("--memtable-size %d: want at least 1KiB", c.memtable)
	}
	reads, err := engine.ParseReadMode(c.reads)
	if err != nil {
		return engine.Options{}, fmt.Errorf("--reads: %w", err)
	}
	if c.direct {
		if reads != engine.ReadsAuto && reads != engine.ReadsDirect {
			return engine.Options{}, fmt.Errorf("--direct-reads is --reads direct: it contradicts --reads %s", reads)
		}
		reads = engine.ReadsDirect
	}
	opts := engine.Options{Sync: mode, SizeHint: c.expect, CacheSize: int64(c.cache), MemtableSize: int64(c.memtable), Reads: reads}
	if d.k > 0 {
		opts.K = d.k
	}
	switch c.design {
	case "memory":
	case "disk":
		k, n := cmp.Or(opts.K, engine.DefaultK), cmp.Or(c.expect, engine.DefaultSizeHint)
		if opts.Design, err = permutation.ForDisk(k, int(n)); err != nil {
			return engine.Options{}, fmt.Errorf("--design disk: %w", err)
		}
	default:
		return engine.Options{}, fmt.Errorf("--design %s: want memory or disk", quoteShort(c.design))
	}
	return opts, nil
}

// open opens d's index to write, creating it with opts if absent (with
// opts.ReadOnly, the index there, to read only), and makes ff the index's
// fingerprint options (a new index stores ff's). On
// failure it returns the exit code to stop with.
func (c *createFlags) open(ctx context.Context, d *dbFlags, opts engine.Options, ff *fingerprintFlags, fl *flag.FlagSet) (*engine.DB, int, error) {
	existed, err := engine.Exists(d.dir)
	if err != nil {
		return nil, exitFailed, err
	}
	if existed {
		opts.Design = nil // --design is for a new index, as --expect is
	}
	db, err := d.open(opts, !opts.ReadOnly) // a read-only open needs an index there
	if err != nil {
		return nil, exitFailed, err
	}
	if err := ff.withIndex(ctx, db, db.SketchSize(), fl, !existed); err != nil {
		db.Close()
		return nil, usageOr(err), err
	}
	c.created = !existed
	if c.created {
		if err := naming.Init(ctx, db); err != nil {
			db.Close()
			return nil, exitFailed, err
		}
	}
	return db, exitOK, nil
}
