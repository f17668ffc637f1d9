package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode/utf8"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/lines"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/textindex"
)

func answerOf(q uint64, qid json.RawMessage, ms []engine.Match) lines.Answer {
	a := lines.Answer{Query: simhash.Format(q), QID: qid, Matches: make([]lines.Match, len(ms))}
	for i, m := range ms {
		a.Matches[i] = lines.NewMatch(m.ID, m.Name, m.Fingerprint, m.Distance)
	}
	return a
}

// verifiedAnswerOf is answerOf for matches verified by their sketches.
func verifiedAnswerOf(q uint64, qid json.RawMessage, ms []textindex.Match) lines.Answer {
	a := lines.Answer{Query: simhash.Format(q), QID: qid, Matches: make([]lines.Match, len(ms))}
	for i, m := range ms {
		a.Matches[i] = lines.NewMatch(m.ID, m.Name, m.Fingerprint, m.Distance)
		a.Matches[i].Similarity = &ms[i].Similarity
	}
	return a
}

// similarityFlag is --similarity of the commands that answer about text.
func similarityFlag(fl *flag.FlagSet) *float64 {
	s := fl.Float64("similarity", textindex.DefaultSimilarity, "on an index with sketches (add --text makes one), report only documents whose text's estimated Jaccard similarity (of 5-word shingles) is at least this, 0 to 1; the fingerprints propose every document within --k, the sketch decides")
	return s
}

// checkSimilarity refuses a --similarity out of range, one given for an
// index without sketches, or one below the lowest the index finds pairs
// for (sketchSize is its sketches').
func checkSimilarity(given bool, s float64, sketchSize int) error {
	if !(s >= 0 && s <= 1) {
		return fmt.Errorf("--similarity %v: want 0 to 1", s)
	}
	if err := textindex.CheckSimilarity(sketchSize, s); err != nil {
		return fmt.Errorf("--similarity: %w", err)
	}
	if given && !textindex.SketchedSize(sketchSize) {
		return errors.New("--similarity: this index keeps no sketches of text (made by add --text before sketches, with --sketches=false, or of fingerprints): it answers by distance (--k)")
	}
	return nil
}

func runQuery(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := newFlagSet("query", "--db DIR [--k K] (--fp FP | --text STRING | --file PATH) [--json]",
		"  simhashdb query --db idx --fp 0x0123456789abcdef\n"+
			"  simhashdb query --db idx --k 2 --file page.txt --json", stderr)
	var d dbFlags
	d.register(fl, "the largest distance of a match (default: the index's K)")
	fpArg := fl.String("fp", "", "the query fingerprint, decimal or 0x hex (bare hex with --hex)")
	hex := registerHex(fl)
	textArg := fl.String("text", "", "fingerprint this text and query it")
	fileArg := fl.String("file", "", "fingerprint this file (- for standard input) and query it")
	asJSON := fl.Bool("json", false, `print {"query":"<hex>","matches":[{"id":..,"name":..,"fp":"<hex>","distance":d,"similarity":s},...]} (similarity: with --text or --file on an index with sketches)`)
	similarity := similarityFlag(fl)
	nearOnly := fl.Bool("fingerprints", false, `with --fp: the stored fingerprints within --k alone, without their documents (on an index flushed since its last writes, the tables' reads only); --json: {"query":"<hex>","fingerprints":[{"fp":"<hex>","distance":d},...]}`)
	var ff fingerprintFlags
	ff.register(fl)
	var rf remoteFlags
	rf.register(fl)
	if code := parseFlags(fl, args); code >= 0 {
		return code
	}
	if err := checkTarget(&d, &rf, fl); err != nil {
		return fail(stderr, "query", exitUsage, err)
	}
	given := map[string]bool{}
	fl.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if err := noArguments(fl); err != nil {
		return fail(stderr, "query", exitUsage, err)
	}
	if n := btoi(given["fp"]) + btoi(given["text"]) + btoi(given["file"]); n != 1 {
		return fail(stderr, "query", exitUsage, errors.New("give exactly one of --fp, --text or --file"))
	}
	if *nearOnly && !given["fp"] {
		return fail(stderr, "query", exitUsage, errors.New("--fingerprints answers a fingerprint: give --fp (a text's documents are what its query verifies)"))
	}
	var q uint64
	if given["fp"] {
		var err error
		if q, err = (lines.Syntax{Hex: *hex}).Fingerprint(*fpArg); err != nil {
			return fail(stderr, "query", exitUsage, fmt.Errorf("--fp: %w", err))
		}
	}
	if rf.remote() {
		for _, n := range fingerprintFlagNames {
			if given[n] {
				return fail(stderr, "query", exitUsage, errors.New("with --server the server fingerprints text with the index's options: leave out --html, --read, --pipeline and the other fingerprint flags"))
			}
		}
	}
	ctx := context.Background()
	ix, closeIx, err := openIndex(&d, &rf, engine.Options{ReadOnly: true})
	if err != nil {
		return fail(stderr, "query", exitFailed, err)
	}
	defer closeIx()
	// ask answers a query of text, read as the index reads text: by the
	// index in this process, or by the server.
	var ask textQuery
	var sketchSize int
	var K int // the largest distance the index answers
	if e, ok := ix.(api.Embedded); ok {
		K = e.K()
		sketchSize = e.SketchSize()
		if err := ff.withIndex(ctx, e.DB, e.SketchSize(), fl, false); err != nil {
			return fail(stderr, "query", usageOr(err), err)
		}
		if !given["fp"] {
			rd, err := ff.textReader(e.SketchSize())
			if err != nil {
				return fail(stderr, "query", exitUsage, err)
			}
			ask = localTextQuery(e.DB, rd)
		}
	} else {
		st, err := ix.Stats(ctx)
		if err != nil && !errors.As(err, new(*engine.StatsError)) {
			return fail(stderr, "query", exitFailed, err)
		}
		sketchSize, K = st.SketchSize, st.K
		if c, ok := ix.(servedIndex); ok {
			ask = servedTextQuery(c, textindex.SketchedSize(sketchSize))
		}
	}
	if err := checkSimilarity(given["similarity"], *similarity, sketchSize); err != nil {
		return fail(stderr, "query", exitUsage, err)
	}
	if given["fp"] && given["similarity"] {
		return fail(stderr, "query", exitUsage, errors.New("--similarity compares texts: give --text or --file, not --fp"))
	}
	if given["fp"] && *nearOnly {
		return queryNear(ix, q, d.k, K, *asJSON, stdout, stderr)
	}
	if given["fp"] {
		return queryFingerprint(ix, q, d.k, K, *asJSON, stdout, stderr)
	}
	k := d.k
	if k < 0 {
		k = K
	}
	var r io.Reader = strings.NewReader(*textArg)
	name := "--text"
	if given["file"] {
		in, inName, _, closeIn, err := openInput(ctx, *fileArg, stdin)
		if err != nil {
			return fail(stderr, "query", exitFailed, fmt.Errorf("%s: %w", inName, err))
		}
		defer closeIn()
		r, name = in, inName
	}
	q, ms, verified, err := ask(ctx, r, name, k, *similarity)
	if err != nil {
		code, err := queryError(err, k, K)
		return fail(stderr, "query", code, err)
	}
	if verified {
		printAnswer(stdout, verifiedAnswerOf(q, nil, ms), k, true, *asJSON)
		return exitOK
	}
	plain := make([]engine.Match, len(ms))
	for i, m := range ms {
		plain[i] = m.Match
	}
	printAnswer(stdout, answerOf(q, nil, plain), k, false, *asJSON)
	return exitOK
}

// textQuery answers a query of the text r (named name in errors) within
// k: its fingerprint, and the matches, verified (with their similarity)
// in an index of text.
type textQuery func(ctx context.Context, r io.Reader, name string, k int, similarity float64) (fp uint64, ms []textindex.Match, verified bool, err error)

// localTextQuery reads text as rd does and asks db.
func localTextQuery(db *engine.DB, rd *textindex.Reader) textQuery {
	return func(ctx context.Context, r io.Reader, name string, k int, similarity float64) (uint64, []textindex.Match, bool, error) {
		fp, sk, err := rd.Read(r)
		if err != nil {
			return 0, nil, false, fmt.Errorf("%s: %w", name, err)
		}
		ms, err := db.Query(ctx, fp, k)
		if err != nil || sk == "" {
			out := make([]textindex.Match, len(ms))
			for i, m := range ms {
				out[i].Match = m
			}
			return fp, out, false, err
		}
		return fp, textindex.Verify(ms, sk, similarity), true, nil
	}
}

// servedTextQuery sends the text to the server, which reads it with the
// index's options (and verifies the matches in an index of text).
func servedTextQuery(c servedIndex, sketched bool) textQuery {
	return func(ctx context.Context, r io.Reader, name string, k int, similarity float64) (uint64, []textindex.Match, bool, error) {
		b, err := io.ReadAll(r)
		if err != nil {
			return 0, nil, false, fmt.Errorf("%s: %w", name, err)
		}
		if !utf8.Valid(b) {
			return 0, nil, false, fmt.Errorf("%s: not UTF-8 text, which the API's text cannot carry unchanged to the server (compressed, binary or in another encoding): query it with --db", name)
		}
		var sim *float64
		if sketched {
			sim = &similarity
		}
		fp, ms, err := c.QueryText(ctx, string(b), k, sim)
		if err != nil && !errors.Is(err, engine.ErrDistance) {
			err = fmt.Errorf("%s: %w", name, err)
		}
		return fp, ms, sketched, err
	}
}

// queryFingerprint answers a query of fp within k (the index's K if
// negative), embedded or served alike.
func queryFingerprint(ix api.Index, q uint64, k, K int, asJSON bool, stdout, stderr io.Writer) int {
	if k < 0 {
		k = K
	}
	ms, err := ix.Query(context.Background(), q, k)
	if err != nil {
		code, err := queryError(err, k, K)
		return fail(stderr, "query", code, err)
	}
	printAnswer(stdout, answerOf(q, nil, ms), k, false, asJSON)
	return exitOK
}

// queryNear answers a query of fp within k (the index's K if negative)
// with the stored fingerprints alone, embedded or served alike.
func queryNear(ix api.Index, q uint64, k, K int, asJSON bool, stdout, stderr io.Writer) int {
	if k < 0 {
		k = K
	}
	ns, err := ix.QueryFingerprints(context.Background(), nil, q, k)
	if err != nil {
		code, err := queryError(err, k, K)
		return fail(stderr, "query", code, err)
	}
	a := api.NearAnswerOf(q, ns)
	if asJSON {
		b, _ := json.Marshal(a)
		fmt.Fprintf(stdout, "%s\n", b)
		return exitOK
	}
	fmt.Fprintf(stdout, "query %s: %d stored fingerprints within distance %d\n", a.Query, len(ns), k)
	if len(ns) > 0 {
		tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
		fmt.Fprintln(tw, "DISTANCE\tFINGERPRINT")
		for _, n := range a.Fingerprints {
			fmt.Fprintf(tw, "%d\t%s\n", n.Distance, n.FP)
		}
		tw.Flush()
	}
	return exitOK
}

// queryError is a query's error as the command reports it: a distance
// the index does not answer is a usage error about --k.
func queryError(err error, k, K int) (int, error) {
	if errors.Is(err, engine.ErrDistance) {
		return exitUsage, fmt.Errorf("--k %d: the index answers distances 0 to %d", k, K)
	}
	return exitFailed, err
}

// printAnswer prints a query's answer: a table, or its JSON; verified says
// its matches carry their similarity.
func printAnswer(w io.Writer, a lines.Answer, k int, verified, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(a)
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	if verified {
		fmt.Fprintf(w, "query %s: %d near-duplicates (candidates within distance %d, verified by their text's similarity)\n", a.Query, len(a.Matches), k)
	} else {
		fmt.Fprintf(w, "query %s: %d within distance %d\n", a.Query, len(a.Matches), k)
	}
	if len(a.Matches) > 0 {
		tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
		if verified {
			fmt.Fprintln(tw, "SIMILARITY\tDISTANCE\tID\tFINGERPRINT\tNAME")
		} else {
			fmt.Fprintln(tw, "DISTANCE\tID\tFINGERPRINT\tNAME")
		}
		for _, m := range a.Matches {
			if verified {
				fmt.Fprintf(tw, "%.2f\t", *m.Similarity)
			}
			fmt.Fprintf(tw, "%d\t%d\t%s\t%s\n", m.Distance, m.ID, m.FP, m.Name)
		}
		tw.Flush()
	}
}

// batchChunk is how many queries one QueryBatch call answers: the paper's
// batch mode gains with size, and memory stays near 100 MB a chunk.
const batchChunk = 1 << 20

func runBatch(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := newFlagSet("batch", "--db DIR [--k K] [--input FILE|-] [--output FILE|-]",
		"  simhashdb batch --db idx --input queries.txt --output answers.jsonl\n\n"+
			"Input: one fingerprint a line (decimal of any length, or 0x hex; bare hex with --hex), or\n"+
			"<qid> <fingerprint>, or the lines of 'simhashdb fingerprint' (the path is the qid).\n"+
			"Output: one JSON line a query, in input order:\n"+
			`  {"query":"<hex>","qid":...,"matches":[{"id":..,"name":..,"fp":"<hex>","distance":d},...]}`+"\n"+
			"qid is the given one (a number, or a string when it is not one), else the line number.\n"+
			"On an index with sketches, the lines of its export (<id> <fingerprint> <sketch> [name])\n"+
			"are answered as about text: matches verified, each with its \"similarity\" (--similarity).", stderr)
	var d dbFlags
	d.register(fl, "the largest distance of a match (default: the index's K)")
	input := fl.String("input", "-", "query fingerprints, one per line (- is standard input)")
	output := fl.String("output", "-", "where the JSON lines go (- is standard output)")
	hex := registerHex(fl)
	similarity := similarityFlag(fl)
	var rf remoteFlags
	rf.register(fl)
	if code := parseFlags(fl, args); code >= 0 {
		return code
	}
	if fl.NArg() > 0 {
		return fail(stderr, "batch", exitUsage, fmt.Errorf("unexpected arguments %q", fl.Args()))
	}
	syn := lines.Syntax{Hex: *hex}
	if err := checkTarget(&d, &rf, fl); err != nil {
		return fail(stderr, "batch", exitUsage, err)
	}
	ctx, stop := signalContext()
	defer stop()
	// answer answers a chunk of queries, writing their JSON lines to w.
	var answer func(w io.Writer, qs []uint64, qids []json.RawMessage, sks []string, at []int) error
	var report func(error)
	chunk := batchChunk
	ix, closeIx, err := openIndex(&d, &rf, engine.Options{ReadOnly: true})
	if err != nil {
		return fail(stderr, "batch", exitFailed, err)
	}
	defer closeIx()
	st, err := ix.Stats(ctx)
	if err != nil && !errors.As(err, new(*engine.StatsError)) {
		return fail(stderr, "batch", exitFailed, err)
	}
	k := d.k
	if k < 0 {
		k = st.K
	}
	if k > st.K {
		return fail(stderr, "batch", exitUsage, fmt.Errorf("--k %d: the index answers distances 0 to %d", k, st.K))
	}
	if err := checkSimilarity(flagGiven(fl, "similarity"), *similarity, st.SketchSize); err != nil {
		return fail(stderr, "batch", exitUsage, err)
	}
	// In an index with sketches, the records of its export carry one: their
	// answers are verified against it (the matches carry theirs).
	syn.Sketch = st.SketchSize
	answer = func(w io.Writer, qs []uint64, qids []json.RawMessage, sks []string, _ []int) error {
		enc := json.NewEncoder(w)
		for res, err := range ix.QueryBatch(ctx, qs, k) {
			if err != nil {
				return err
			}
			a := answerOf(res.Query, qids[res.Index], res.Matches)
			if sk := sks[res.Index]; sk != "" {
				a = verifiedAnswerOf(res.Query, qids[res.Index], textindex.Verify(res.Matches, sk, *similarity))
			}
			if err := enc.Encode(a); err != nil {
				return err
			}
		}
		return nil
	}
	r, name, _, closeIn, err := openInput(ctx, *input, stdin)
	if err != nil {
		return fail(stderr, "batch", exitFailed, fmt.Errorf("%s: %w", name, err))
	}
	defer closeIn()
	w, closeOut, err := openOutput(*output, stdout)
	if err != nil {
		return fail(stderr, "batch", exitFailed, err)
	}
	code := exitOK
	report = func(err error) {
		fmt.Fprintf(stderr, "%s batch: %v\n", programName, err)
		code = exitFailed
	}
	bad := func(n int, err error) { report(&inputError{name, n, err}) }
	var qs []uint64
	var qids []json.RawMessage
	var sks []string // a query's sketch: a record of an index with sketches
	var at []int
	run := func() error {
		err := answer(w, qs, qids, sks, at)
		qs, qids, sks, at = qs[:0], qids[:0], sks[:0], at[:0]
		return err
	}
	err = scanLines(r, name, func(n int, line string, tooLong error) error {
		if tooLong != nil {
			bad(n, tooLong)
			return nil
		}
		if t := strings.TrimSpace(line); t == "" || t[0] == '#' {
			return nil
		}
		var sk string
		qid, fp, err := syn.Query(line, n)
		if syn.Sketch > 0 {
			if id, rfp, rsk, _, rerr := syn.SketchedRecord(line); rerr == nil {
				qid, fp, sk, err = json.RawMessage(strconv.FormatUint(id, 10)), rfp, rsk, nil
			}
		}
		if err != nil {
			bad(n, err)
			return nil
		}
		qs, qids, sks, at = append(qs, fp), append(qids, qid), append(sks, sk), append(at, n)
		if len(qs) == chunk {
			return run()
		}
		return nil
	})
	if err == nil && len(qs) > 0 {
		err = run()
	}
	if cerr := closeOut(); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		return fail(stderr, "batch", exitFailed, err)
	}
	return code
}

func runDelete(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fl := newFlagSet("delete", "--db DIR ID...", "  simhashdb delete --db idx 17 42", stderr)
	var d dbFlags
	fl.StringVar(&d.dir, "db", "", "the index folder (required)")
	syncMode := fl.String("sync", "always", "durability: always, interval or none")
	var rf remoteFlags
	rf.register(fl)
	if code := parseFlags(fl, args); code >= 0 {
		return code
	}
	if err := checkTarget(&d, &rf, fl); err != nil {
		return fail(stderr, "delete", exitUsage, err)
	}
	ids, err := parseIDs(fl.Args())
	if err != nil {
		return fail(stderr, "delete", exitUsage, err)
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	opts := engine.Options{}
	if opts.Sync, err = engine.ParseSyncMode(*syncMode); err != nil {
		return fail(stderr, "delete", exitUsage, fmt.Errorf("--sync: %w", err))
	}
	ix, closeIx, err := openIndex(&d, &rf, opts)
	if err != nil {
		return fail(stderr, "delete", exitFailed, err)
	}
	ctx := context.Background()
	var missing []string
	for _, id := range ids {
		if _, err := ix.Get(ctx, id); errors.Is(err, engine.ErrNotFound) {
			missing = append(missing, strconv.FormatUint(id, 10))
		} else if err != nil {
			closeIx()
			return fail(stderr, "delete", exitFailed, err)
		}
	}
	err = ix.Delete(ctx, ids...)
	if f, ok := ix.(interface{ Flush(context.Context) error }); ok && err == nil {
		err = f.Flush(ctx) // the index in --db: its log replays nothing next time
	}
	if cerr := closeIx(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(stderr, "delete", exitFailed, err)
	}
	printDeleted(stdout, len(ids), missing)
	return exitOK
}

func runStats(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fl := newFlagSet("stats", "--db DIR [--json]", "  simhashdb stats --db idx --json", stderr)
	var d dbFlags
	fl.StringVar(&d.dir, "db", "", "the index folder (required)")
	asJSON := fl.Bool("json", false, "print the statistics as one JSON object")
	var rf remoteFlags
	rf.register(fl)
	if code := parseFlags(fl, args); code >= 0 {
		return code
	}
	if err := errors.Join(noArguments(fl), checkTarget(&d, &rf, fl)); err != nil {
		return fail(stderr, "stats", exitUsage, err)
	}
	ix, closeIx, err := openIndex(&d, &rf, engine.Options{ReadOnly: true})
	if err != nil {
		return fail(stderr, "stats", exitFailed, err)
	}
	defer closeIx()
	out, err := api.StatsOfIndex(context.Background(), ix)
	if err != nil {
		return fail(stderr, "stats", exitFailed, err)
	}
	st, fpOpts := out.Stats, out.Fingerprint
	if *asJSON {
		b, _ := json.MarshalIndent(out, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
		return exitOK
	}
	fmt.Fprintf(stdout, "documents          %d (%d writes not yet flushed, counted)\n", st.Documents, st.PendingWrites)
	if st.PendingWrites > 0 {
		fmt.Fprintf(stdout, "fingerprints       %d distinct in the tables; the %d writes not yet flushed count from the next flush, as do table bytes and blocks\n", st.Fingerprints, st.PendingWrites)
	} else {
		fmt.Fprintf(stdout, "fingerprints       %d distinct\n", st.Fingerprints)
	}
	fmt.Fprintf(stdout, "tables             %d, answering distances up to %d", len(st.Tables), st.K)
	if st.Design != nil && st.Design.ExactWithin() < st.K {
		fmt.Fprintf(stdout, " (every fingerprint within %d; beyond, candidates for the sketches: most, not all)", st.Design.ExactWithin())
	}
	fmt.Fprintln(stdout)
	fmt.Fprintf(stdout, "table bytes        %d (%.2f bits a fingerprint a table; %.2f is the bound for as many uniform random ones, which clustered fingerprints go below)\n", st.TableBytes, st.BitsPerFingerprint, st.EntropyBound)
	fmt.Fprintf(stdout, "block versions     %s\n", versionCounts(st.BlockVersions))
	if st.SketchSize > 0 {
		fmt.Fprintf(stdout, "sketches           %d bytes a document: near-duplicates of text are verified by it (query --text/--file, find-all, find-clusters: --similarity)\n", st.SketchSize)
		if m, ok := textindex.MinSimilarityOfSize(st.SketchSize); ok {
			fmt.Fprintf(stdout, "min similarity     %g: the band keys in each document's record find every pair from it in time linear in the documents (find-all, find-clusters); lower ones are refused (add --min-similarity at creation)\n", m)
		}
	}
	if st.Applied > 0 {
		fmt.Fprintf(stdout, "applied position   %d (the last commit applied at a replicated log's position: a replica resumes after it)\n", st.Applied)
	}
	fmt.Fprintf(stdout, "bytes on disk      %d", st.BytesOnDisk)
	if st.Documents > 0 {
		fmt.Fprintf(stdout, " (%.0f a document)", float64(st.BytesOnDisk)/float64(st.Documents))
	}
	fmt.Fprintln(stdout)
	if len(out.Unmeasured) > 0 {
		fmt.Fprintf(stdout, "pebble index       unknown: %s (check names the damage)\n", out.Problem)
	} else {
		fmt.Fprintf(stdout, "pebble index       %d bytes of index and filter blocks over the tables; Pebble's share of the cache may grow to %d bytes (a limit, not memory taken)%s\n", st.PebbleIndexBytes, st.PebbleCacheSize, indexFit(st))
	}
	if st.ReadRing && st.ReadDirect {
		fmt.Fprintf(stdout, "reads              through an io_uring ring, with O_DIRECT what the page cache does not hold (--reads direct, or auto for an index more than 1.2 times the memory): a cold query's block reads reach the disk together\n")
	} else if st.ReadRing {
		fmt.Fprintf(stdout, "reads              through an io_uring ring: a cold query's block reads reach the disk together\n")
	} else {
		fmt.Fprintf(stdout, "reads              with pread (no io_uring here, or --reads blocking)\n")
	}
	switch {
	case fpOpts != nil:
		fmt.Fprintf(stdout, "text options       %s (kept with the index: add --text, query --text/--file and serve use them)\n", schemaString(*fpOpts))
	default:
		fmt.Fprintf(stdout, "text options       none stored (an index made before they were kept: text is fingerprinted with the flags given)\n")
	}
	if st.Design != nil {
		fmt.Fprintln(stdout)
		describeDesign(stdout, st.Design, st.Fingerprints)
	}
	return exitOK
}

// describeDesign writes design d's tables, as permutation.Design.Describe
// does, for an index of n fingerprints.
func describeDesign(w io.Writer, d *permutation.Design, n int64) {
	logN := 0.0
	if n > 1 {
		logN = math.Log2(float64(n))
	}
	fmt.Fprintf(w, "K = %d, %d tables, %d fingerprints\n", d.K, len(d.Tables), n)
	d.Describe(w, logN)
}

// indexFit says what a cold query pays when Pebble's cache cannot hold
// its index and filter blocks, and what would hold them.
func indexFit(st engine.Stats) string {
	if st.PebbleIndexBytes <= st.PebbleCacheSize || st.CacheForIndex <= st.CacheSize {
		return ""
	}
	return fmt.Sprintf(" (too little: a cold query also reads some of them from the disk; a cache of %d MiB would hold them, and the cache is a quarter of the memory the process may use: GOMEMLIMIT, its cgroup's limit or the machine's)", st.CacheForIndex>>20+1)
}

func runCheck(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fl := newFlagSet("check", "--db DIR | --server URL", "  simhashdb check --db idx && echo intact", stderr)
	var d dbFlags
	fl.StringVar(&d.dir, "db", "", "the index folder (required)")
	var rf remoteFlags
	rf.register(fl)
	if code := parseFlags(fl, args); code >= 0 {
		return code
	}
	if err := errors.Join(noArguments(fl), checkTarget(&d, &rf, fl)); err != nil {
		return fail(stderr, "check", exitUsage, err)
	}
	ix, closeIx, err := openIndex(&d, &rf, engine.Options{ReadOnly: true})
	if err != nil {
		return fail(stderr, "check", exitFailed, err)
	}
	defer closeIx()
	rep, err := ix.Check(context.Background())
	if err != nil {
		return fail(stderr, "check", exitFailed, err)
	}
	for _, f := range rep.Unlisted {
		fmt.Fprintf(stderr, "simhashdb check: warning: %s is not listed by the store's MANIFEST: left by a crash after a compaction (a writable open deletes it), or by damage\n", f)
	}
	fmt.Fprintf(stdout, "ok: the tables hold %d documents, %d postings, %d fingerprints, %d blocks (%s); %d log records not yet flushed verified\n",
		rep.Documents, rep.Postings, rep.Fingerprints, rep.Blocks, versionCounts(rep.BlockVersions), rep.WALRecords)
	return exitOK
}

// versionCounts says how many table blocks each codec version holds.
func versionCounts[N int | int64](m map[string]N) string {
	if len(m) == 0 {
		return "none"
	}
	var parts []string
	for _, v := range slices.Sorted(maps.Keys(m)) {
		parts = append(parts, fmt.Sprintf("%d of codec version %s", m[v], v))
	}
	return strings.Join(parts, ", ")
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// usageOr is the exit code of err: a usage error for flags that contradict
// the index, a failure otherwise.
func usageOr(err error) int {
	if errors.Is(err, errConflict) {
		return exitUsage
	}
	return exitFailed
}

// printDeleted says what delete did.
func printDeleted(w io.Writer, ids int, missing []string) {
	switch {
	case len(missing) == 0:
		fmt.Fprintf(w, "deleted %s\n", plural(ids, "document"))
	case len(missing) == ids:
		fmt.Fprintf(w, "deleted nothing: %s not stored\n", strings.Join(missing, ", "))
	default:
		fmt.Fprintf(w, "deleted %s; not stored: %s\n", plural(ids-len(missing), "document"), strings.Join(missing, ", "))
	}
}
