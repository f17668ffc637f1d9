package main

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"iter"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/lines"
	"github.com/simhashdb/simhashdb/join"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/textindex"
)

// pairFlags are find-all's and find-clusters' flags: simhash-cpp's, long
// and short, plus --db.
type pairFlags struct {
	blocks, distance int
	inputs           inputList
	output           string
	db               string
	method           string // find-clusters: components or star
	print            string // auto, decimal or hex
	hex              *bool
	similarity       *float64
	distanceGiven    bool
	similarityGiven  bool
	// The band join of a text index (textindex.JoinOptions).
	tempDir    string
	joinMemory byteSize
	progress   string
}

// inputList is a repeatable --input: paths and glob patterns, in order.
type inputList []string

func (l *inputList) String() string { return strings.Join(*l, " ") }

func (l *inputList) Set(v string) error {
	*l = append(*l, v)
	return nil
}

// paths expands the globs of l: each pattern must match a file, and "-" is
// standard input; none given is standard input.
func (l inputList) paths() ([]string, error) {
	if len(l) == 0 {
		return []string{"-"}, nil
	}
	var out []string
	for _, v := range l {
		if v == "-" || !strings.ContainsAny(v, "*?[") {
			out = append(out, v)
			continue
		}
		m, err := filepath.Glob(v)
		if err != nil {
			return nil, fmt.Errorf("--input %s: %w", v, err)
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("--input %s: no file matches", v)
		}
		out = append(out, m...)
	}
	return out, nil
}

func (p *pairFlags) register(fl *flag.FlagSet) {
	for _, n := range []string{"blocks", "b"} {
		fl.IntVar(&p.blocks, n, 0, "split fingerprints into this many blocks, C(blocks, distance) tables, as simhash-cpp does; 0 picks the fastest design for the input's size")
	}
	for _, n := range []string{"distance", "d"} {
		fl.IntVar(&p.distance, n, 3, "the largest Hamming distance of a pair")
	}
	for _, n := range []string{"input", "i"} {
		fl.Var(&p.inputs, n, "fingerprints, one a line: unsigned decimal (simhash-cpp's) or 0x hex, alone or as 'simhashdb fingerprint' writes them; a path, a glob (quoted), or - for standard input (the default); repeat it to read several, in order")
	}
	fl.StringVar(&p.print, "print", "auto", "how fingerprints are printed: decimal (simhash-cpp's), hex (\"0x...\" strings), or auto: hex when every input fingerprint was written in hex, else decimal")
	for _, n := range []string{"output", "o"} {
		fl.StringVar(&p.output, n, "-", "where the JSON arrays go; - is standard output")
	}
	fl.StringVar(&p.db, "db", "", "run over this index instead of --input (its documents are printed)")
	p.hex = registerHex(fl)
	fl.StringVar(&p.tempDir, "temp-dir", "", "with --db of a text index: the folder of the join's sorted runs, about 50 bytes a band key of a document, removed at the end (default: the system's temporary folder)")
	p.joinMemory = textindex.DefaultJoinMemory
	fl.Var(&p.joinMemory, "join-memory", "with --db of a text index: the memory the join's sorts hold (units allowed: 1GiB)")
	fl.StringVar(&p.progress, "progress", "auto", "with --db of a text index: the join's progress on stderr: auto (a line on a terminal), bar, json or none")
}

const methodHelp = `How to cluster (--method):
  components  connected components of the within-distance graph (simhash-cpp's): all that
              is linked, however long the chain; two members can be far apart. Choose it
              to find every document related to another.
  star        leader clustering: in order (with --db the document stored first, from a
              file the smallest fingerprint), each document not yet in a cluster leads
              one and takes every document within --distance of it not yet taken. Every
              member is within --distance of its leader, which is printed first. Choose
              it to keep one document of each group of near-duplicates.`

const pairsHelp = `Like simhash-cpp, input is newline-separated fingerprints and output is one JSON
array a line. Unlike it: an empty or malformed line is an error naming its file and
line (nothing is printed), 0x hex is accepted (and then printed back as "0x..."
strings: --print says otherwise), 'simhashdb fingerprint' output is read as it is,
several --input files and globs are read as one set, --input and --output default to
standard input and output, and equal fingerprints on two lines are a match at
distance 0.`

func runFindAll(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runPairs("find-all", args, stdin, stdout, stderr)
}

func runFindClusters(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	return runPairs("find-clusters", args, stdin, stdout, stderr)
}

func runPairs(cmd string, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	example := "  simhashdb find-all -b 6 -d 3 -i fingerprints.txt -o pairs.jsonl\n" +
		"  simhashdb find-all --db idx -d 2\n\n" +
		"Each line is a pair [a, b] with a < b; a fingerprint that occurs on several lines\n" +
		"pairs with itself once: [a, a]. With --db each line is a JSON object of two documents\n" +
		"and their distance: {\"a\":{\"id\",\"name\",\"fp\"},\"b\":{...},\"distance\"}, a.id < b.id, streamed\n" +
		"as found (documents that share a fingerprint first).\n\n" + pairsHelp
	if cmd == "find-clusters" {
		example = "  simhashdb find-clusters -d 3 -i fingerprints.txt\n" +
			"  simhashdb find-clusters --db idx\n\n" +
			"Each line is a cluster: the fingerprints (or, with --db, the document ids) of a connected\n" +
			"group of near-duplicates, ascending, a fingerprint as often as it occurs in the input.\n" +
			"With --db each line is a JSON object: {\"size\":N,\"documents\":[{\"id\",\"name\",\"fp\"},...]}, by id.\n" +
			"Two members of a cluster can be farther apart than --distance: a chain links them.\n\n" +
			methodHelp + "\n\n" + pairsHelp
	}
	fl := newFlagSet(cmd, "[-b BLOCKS] [-d DISTANCE] [-i PATH|GLOB|-]... [-o PATH|-] [--print auto|decimal|hex] | --db DIR [-d DISTANCE] [-o PATH|-]", example, stderr)
	var p pairFlags
	p.register(fl)
	var rf remoteFlags
	rf.register(fl)
	if cmd == "find-clusters" {
		fl.StringVar(&p.method, "method", "components", "components (all that is linked) or star (members within --distance of a leader); see below")
	}
	p.similarity = similarityFlag(fl)
	if code := parseFlags(fl, args); code >= 0 {
		return code
	}
	p.distanceGiven = flagGiven(fl, "distance") || flagGiven(fl, "d")
	p.similarityGiven = flagGiven(fl, "similarity")
	if p.similarityGiven && p.db == "" && !rf.remote() {
		return fail(stderr, cmd, exitUsage, errors.New("--similarity compares the texts of an index's documents: it goes with --db"))
	}
	if p.method != "" && p.method != "components" && p.method != "star" {
		return fail(stderr, cmd, exitUsage, fmt.Errorf("--method %s: want components or star", quoteShort(p.method)))
	}
	if fl.NArg() > 0 {
		return fail(stderr, cmd, exitUsage, fmt.Errorf("unexpected arguments %q", fl.Args()))
	}
	if p.distance < 0 || p.distance > 16 {
		return fail(stderr, cmd, exitUsage, fmt.Errorf("--distance %d: want 0 to 16", p.distance))
	}
	ctx, stop := signalContext()
	defer stop()
	switch {
	case rf.remote() && (p.db != "" || len(p.inputs) > 0 || p.blocks != 0):
		return fail(stderr, cmd, exitUsage, errors.New("--server runs over the served index: leave out --db, --input and --blocks"))
	case p.db != "" && p.blocks != 0:
		return fail(stderr, cmd, exitUsage, errors.New("--blocks does not apply with --db: the index's own tables are used"))
	case p.db != "" || rf.remote():
		return pairsOfIndex(ctx, cmd, &p, &rf, stdout, stderr)
	}
	if p.blocks != 0 && p.blocks <= p.distance {
		return fail(stderr, cmd, exitUsage, fmt.Errorf("--blocks %d: want more blocks than --distance %d", p.blocks, p.distance))
	}
	// The work is a few large buffers that live to the end: collecting
	// sooner than Go's default keeps the peak lower for little CPU.
	debug.SetGCPercent(50)
	switch p.print {
	case "auto", "decimal", "hex":
	default:
		return fail(stderr, cmd, exitUsage, fmt.Errorf("--print %s: want auto, decimal or hex", quoteShort(p.print)))
	}
	paths, err := p.inputs.paths()
	if err != nil {
		return fail(stderr, cmd, exitUsage, err)
	}
	var fps []uint64
	syn := lines.Syntax{Hex: *p.hex}
	hexSeen, decSeen := false, false
	for _, path := range paths {
		if err := readPairInput(ctx, path, stdin, syn, &fps, &hexSeen, &decSeen); err != nil {
			return fail(stderr, cmd, exitFailed, err)
		}
	}
	asHex := p.print == "hex" || p.print == "auto" && hexSeen && !decSeen
	var design *permutation.Design
	if p.blocks > 0 {
		design, err = permutation.Blocks(p.distance, p.blocks)
	} else {
		design, err = join.DesignFor(p.distance, len(fps))
	}
	if err != nil {
		return fail(stderr, cmd, exitUsage, err)
	}
	f, err := join.New(design, p.distance)
	if err != nil {
		return fail(stderr, cmd, exitUsage, err)
	}
	distinct, repeated := join.Distinct(fps)
	pairs, err := f.Pairs(ctx, distinct, 0)
	if err != nil {
		return fail(stderr, cmd, exitFailed, err)
	}
	for v := range repeated {
		pairs = append(pairs, join.Pair{A: v, B: v})
	}
	w, closeOut, err := openOutput(p.output, stdout)
	if err != nil {
		return fail(stderr, cmd, exitFailed, err)
	}
	if cmd == "find-all" {
		slices.SortFunc(pairs, func(x, y join.Pair) int { return cmp.Or(cmp.Compare(x.A, y.A), cmp.Compare(x.B, y.B)) })
		for _, pr := range pairs {
			writeArray(w, asHex, pr.A, pr.B)
		}
	} else {
		clusters := join.Components(pairs)
		if p.method == "star" {
			clusters = slices.DeleteFunc(join.Stars(pairs, distinct), func(s []uint64) bool { return len(s) == 1 && repeated[s[0]] == 0 })
		}
		var members []uint64
		for _, c := range clusters {
			members = members[:0]
			for _, v := range c {
				for range max(repeated[v], 1) { // as often as it occurs
					members = append(members, v)
				}
			}
			writeArray(w, asHex, members...)
		}
	}
	if err := closeOut(); err != nil {
		return fail(stderr, cmd, exitFailed, err)
	}
	return exitOK
}

// writeArray writes one JSON array of fingerprints and a newline:
// unsigned integers, or with hex "0x" strings.
func writeArray(w *bufio.Writer, hex bool, vs ...uint64) {
	var b [64]byte
	if hex {
		w.Write(lines.AppendHexArray(b[:0], vs...))
		return
	}
	w.Write(lines.AppendArray(b[:0], vs...))
}

// readPairInput appends the fingerprints of one input to fps, noting
// whether they were written in hex or decimal.
func readPairInput(ctx context.Context, path string, stdin io.Reader, syn lines.Syntax, fps *[]uint64, hexSeen, decSeen *bool) error {
	r, name, size, closeIn, err := openInput(ctx, path, stdin)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer closeIn()
	if size > 0 && len(*fps) == 0 {
		// Sized up front: growing a slice of millions by appends costs more
		// than counting the lines (page faults of every copy).
		n, err := countLines(path)
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		*fps = make([]uint64, 0, n+1)
	}
	return scanLines(r, name, func(n int, line string, tooLong error) error {
		if tooLong != nil {
			return &inputError{name, n, tooLong}
		}
		fp, skip, err := syn.AnyFingerprint(line)
		if err != nil {
			return &inputError{name, n, err}
		}
		if skip {
			return nil
		}
		tok := strings.Fields(line)
		if _, err := syn.Pair(line); err != nil && len(tok) > 1 {
			tok = tok[1:] // a record: its fingerprint is the second field
		}
		if syn.Hex || strings.HasPrefix(tok[0], "0x") || strings.HasPrefix(tok[0], "0X") {
			*hexSeen = true
		} else {
			*decSeen = true
		}
		*fps = append(*fps, fp)
		return nil
	})
}

// pairsOfIndex answers find-all and find-clusters about an index, in --db
// or served at --server alike: JSON lines of documents, verified by their
// sketches in an index of text.
func pairsOfIndex(ctx context.Context, cmd string, p *pairFlags, rf *remoteFlags, stdout, stderr io.Writer) int {
	// Every pass reads the index once, in order: a cache would hold what is
	// not read again, beside the join's own memory.
	ix, closeIx, err := openIndex(&dbFlags{dir: p.db}, rf, engine.Options{ReadOnly: true, CacheSize: 32 << 20})
	if err != nil {
		return fail(stderr, cmd, exitFailed, err)
	}
	defer closeIx()
	if e, ok := ix.(api.Embedded); ok {
		// The sorts' buffers live to the end of each pass: collecting
		// sooner than Go's default keeps the peak near them.
		debug.SetGCPercent(50)
		mode, err := progressMode(p.progress, stderr)
		if err != nil {
			return fail(stderr, cmd, exitUsage, err)
		}
		jp := newJoinProgress(mode, stderr)
		defer jp.stop()
		e.Join = textindex.JoinOptions{TempDir: p.tempDir, Memory: int(p.joinMemory), Progress: jp.report}
		ix = e
	}
	st, err := ix.Stats(ctx)
	if err != nil && !errors.As(err, new(*engine.StatsError)) {
		return fail(stderr, cmd, exitFailed, err)
	}
	verified := textindex.SketchedSize(st.SketchSize)
	if err := checkSimilarity(p.similarityGiven, *p.similarity, st.SketchSize); err != nil {
		return fail(stderr, cmd, exitUsage, err)
	}
	if verified && !p.distanceGiven {
		p.distance = st.K // candidates for recall, the sketch for precision
	}
	if p.distance > st.K {
		return fail(stderr, cmd, exitUsage, fmt.Errorf("--distance %d: the index answers distances 0 to %d", p.distance, st.K))
	}
	vx, _ := ix.(api.Verifier)
	if verified && vx == nil {
		return fail(stderr, cmd, exitFailed, errors.New("the index keeps sketches, and this way to it cannot verify them"))
	}
	w, closeOut, err := openOutput(p.output, stdout)
	if err != nil {
		return fail(stderr, cmd, exitFailed, err)
	}
	enc := json.NewEncoder(w)
	switch {
	case cmd == "find-all" && verified:
		for pr, e := range vx.Pairs(ctx, p.distance, *p.similarity) {
			if err = e; err != nil {
				break
			}
			if err = enc.Encode(api.Pair{A: api.DocOf(pr.A), B: api.DocOf(pr.B), Distance: pr.Distance, Similarity: &pr.Similarity}); err != nil {
				break
			}
		}
	case cmd == "find-all":
		for pr, e := range ix.FindAll(ctx, p.distance) {
			if err = e; err != nil {
				break
			}
			if err = enc.Encode(api.Pair{A: api.DocOf(pr.A), B: api.DocOf(pr.B), Distance: pr.Distance}); err != nil {
				break
			}
		}
	default:
		var c api.Cluster
		clusters := ix.Clusters
		if p.method == "star" {
			clusters = ix.Stars
		}
		if verified {
			clusters = func(ctx context.Context, k int) iter.Seq2[[]engine.Doc, error] {
				return vx.VerifiedClusters(ctx, k, *p.similarity, p.method == "star")
			}
		}
		for docs, e := range clusters(ctx, p.distance) {
			if err = e; err != nil {
				break
			}
			c.Size, c.Documents = len(docs), c.Documents[:0]
			for _, d := range docs {
				c.Documents = append(c.Documents, api.DocOf(d))
			}
			if err = enc.Encode(c); err != nil {
				break
			}
		}
	}
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(stderr, cmd, exitFailed, err)
	}
	return exitOK
}

// countLines counts the newlines of a file.
func countLines(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	buf := make([]byte, 1<<20)
	n := 0
	for {
		m, err := f.Read(buf)
		n += bytes.Count(buf[:m], []byte{'\n'})
		if err == io.EOF {
			return n, nil
		}
		if err != nil {
			return n, err
		}
	}
}
