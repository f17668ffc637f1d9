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
	"os"
	"runtime/debug"
	"slices"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/engine/join"
	"github.com/simhashdb/simhashdb/internal/lines"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/simhash"
)

// pairFlags are find-all's and find-clusters' flags: simhash-cpp's, long
// and short, plus --db.
type pairFlags struct {
	blocks, distance int
	input, output    string
	db               string
	method           string // find-clusters: components or star
}

func (p *pairFlags) register(fl *flag.FlagSet) {
	for _, n := range []string{"blocks", "b"} {
		fl.IntVar(&p.blocks, n, 0, "split fingerprints into this many blocks, C(blocks, distance) tables, as simhash-cpp does; 0 picks the fastest design for the input's size")
	}
	for _, n := range []string{"distance", "d"} {
		fl.IntVar(&p.distance, n, 3, "the largest Hamming distance of a pair")
	}
	for _, n := range []string{"input", "i"} {
		fl.StringVar(&p.input, n, "-", "fingerprints, one unsigned decimal (or 0x hex) a line; - is standard input")
	}
	for _, n := range []string{"output", "o"} {
		fl.StringVar(&p.output, n, "-", "where the JSON arrays go; - is standard output")
	}
	fl.StringVar(&p.db, "db", "", "run over this index instead of --input (its documents are printed)")
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
array a line. Unlike it: an empty or malformed line is an error naming its line
(nothing is printed), 0x hex is accepted, --input and --output default to standard
input and output, and equal fingerprints on two lines are a match at distance 0.`

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
	fl := newFlagSet(cmd, "[-b BLOCKS] [-d DISTANCE] [-i PATH|-] [-o PATH|-] | --db DIR [-d DISTANCE] [-o PATH|-]", example, stderr)
	var p pairFlags
	p.register(fl)
	if cmd == "find-clusters" {
		fl.StringVar(&p.method, "method", "components", "components (all that is linked) or star (members within --distance of a leader); see below")
	}
	if code := parseFlags(fl, args); code >= 0 {
		return code
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
	if p.db != "" {
		if p.blocks != 0 {
			return fail(stderr, cmd, exitUsage, errors.New("--blocks does not apply with --db: the index's own tables are used"))
		}
		return pairsFromDB(ctx, cmd, &p, stdout, stderr)
	}
	if p.blocks != 0 && p.blocks <= p.distance {
		return fail(stderr, cmd, exitUsage, fmt.Errorf("--blocks %d: want more blocks than --distance %d", p.blocks, p.distance))
	}
	// The work is a few large buffers that live to the end: collecting
	// sooner than Go's default keeps the peak lower for little CPU.
	debug.SetGCPercent(50)
	r, name, size, closeIn, err := openInput(ctx, p.input, stdin)
	if err != nil {
		return fail(stderr, cmd, exitFailed, fmt.Errorf("%s: %w", name, err))
	}
	defer closeIn()
	var fps []uint64
	if size > 0 {
		// Sized up front: growing a slice of millions by appends costs more
		// than counting the lines (page faults of every copy).
		n, err := countLines(p.input)
		if err != nil {
			return fail(stderr, cmd, exitFailed, fmt.Errorf("%s: %w", name, err))
		}
		fps = make([]uint64, 0, n+1)
	}
	err = scanLines(r, name, func(n int, line string, tooLong error) error {
		if tooLong != nil {
			return &inputError{name, n, tooLong}
		}
		if line == "" {
			return &inputError{name, n, errors.New("empty line: want a fingerprint")}
		}
		fp, err := lines.Fingerprint(line)
		if err != nil {
			return &inputError{name, n, err}
		}
		fps = append(fps, fp)
		return nil
	})
	if err != nil {
		return fail(stderr, cmd, exitFailed, err)
	}
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
			writeArray(w, pr.A, pr.B)
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
			writeArray(w, members...)
		}
	}
	if err := closeOut(); err != nil {
		return fail(stderr, cmd, exitFailed, err)
	}
	return exitOK
}

// writeArray writes one JSON array of unsigned integers and a newline.
func writeArray(w *bufio.Writer, vs ...uint64) {
	var b [64]byte
	w.Write(lines.AppendArray(b[:0], vs...))
}

func pairsFromDB(ctx context.Context, cmd string, p *pairFlags, stdout, stderr io.Writer) int {
	d := dbFlags{dir: p.db}
	db, err := d.open(engine.Options{ReadOnly: true}, false)
	if err != nil {
		return fail(stderr, cmd, exitFailed, err)
	}
	defer db.Close()
	if p.distance > db.K() {
		return fail(stderr, cmd, exitUsage, fmt.Errorf("--distance %d: the index answers up to %d", p.distance, db.K()))
	}
	w, closeOut, err := openOutput(p.output, stdout)
	if err != nil {
		return fail(stderr, cmd, exitFailed, err)
	}
	enc := json.NewEncoder(w)
	if cmd == "find-all" {
		for pr, e := range db.FindAll(ctx, p.distance) {
			if err = e; err != nil {
				break
			}
			if err = enc.Encode(jsonPair{jsonDocOf(pr.A), jsonDocOf(pr.B), pr.Distance}); err != nil {
				break
			}
		}
	} else {
		var c jsonCluster
		clusters := db.Clusters
		if p.method == "star" {
			clusters = db.Stars
		}
		for docs, e := range clusters(ctx, p.distance) {
			if err = e; err != nil {
				break
			}
			c.Size, c.Documents = len(docs), c.Documents[:0]
			for _, d := range docs {
				c.Documents = append(c.Documents, jsonDocOf(d))
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

// jsonDoc is a document in our JSON.
type jsonDoc struct {
	ID   uint64 `json:"id"`
	Name string `json:"name"`
	FP   string `json:"fp"`
}

func jsonDocOf(d engine.Doc) jsonDoc { return jsonDoc{d.ID, d.Name, simhash.Format(d.Fingerprint)} }

// jsonPair is a line of find-all --db.
type jsonPair struct {
	A        jsonDoc `json:"a"`
	B        jsonDoc `json:"b"`
	Distance int     `json:"distance"`
}

// jsonCluster is a line of find-clusters --db.
type jsonCluster struct {
	Size      int       `json:"size"`
	Documents []jsonDoc `json:"documents"`
}
