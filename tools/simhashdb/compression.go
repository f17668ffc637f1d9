package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/simhashdb/simhashdb/bench/chart"
	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/compression"
	"github.com/simhashdb/simhashdb/internal/lines"
)

// compressionFlags are the compression command's flags.
type compressionFlags struct {
	inputs     inputList
	db         string
	rf         remoteFlags
	blockSizes string
	asJSON     bool
	chart      string
}

func runCompression(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := newFlagSet("compression", "[--input FILE]... | --db DIR | --server URL [--block-sizes LIST] [--json] [--chart FILE.png]",
		"  simhashdb compression -i fingerprints.txt\n"+
			"  simhashdb compression --db idx --json\n\n"+
			"Reports the bits per fingerprint of the distinct fingerprints of the input (as find-all and\n"+
			"add read them: a fingerprint a line, 'simhashdb fingerprint' lines, or <id> <fingerprint>\n"+
			"[name]) or of an index's documents: the engine's codec at each block size (its blocks and\n"+
			"their keys, which an index keeps anyway and a set kept alone needs), beside plain and\n"+
			"partitioned Elias-Fano, roaring64, zstd over the gaps and plain Pebble keys with Zstd. The\n"+
			"information bound is what uniformly drawn sets of as many fingerprints need on average:\n"+
			"real fingerprints, which cluster, can go below it. The fingerprints are held in memory (8\n"+
			"bytes each, and about 22 more while roaring64 and zstd measure a uniform set).", stderr)
	var f compressionFlags
	for _, n := range []string{"input", "i"} {
		fl.Var(&f.inputs, n, "fingerprints, one a line; a path, a glob (quoted), or - for standard input (the default); repeat it to read several")
	}
	fl.StringVar(&f.db, "db", "", "measure this index's documents instead of --input")
	f.rf.register(fl)
	fl.StringVar(&f.blockSizes, "block-sizes", joinInts(compression.DefaultBlockSizes), "the codec's block sizes to measure, in bytes, comma-separated")
	fl.BoolVar(&f.asJSON, "json", false, "print the report as one JSON object")
	fl.StringVar(&f.chart, "chart", "", "also draw the bits per fingerprint of each method into this PNG file")
	if code := parseFlags(fl, args); code >= 0 {
		return code
	}
	if fl.NArg() > 0 {
		return fail(stderr, "compression", exitUsage, fmt.Errorf("unexpected argument %s: inputs go after --input", quoteShort(fl.Arg(0))))
	}
	if (f.db != "" || f.rf.remote()) && len(f.inputs) > 0 {
		return fail(stderr, "compression", exitUsage, errors.New("--db or --server, and --input: give one"))
	}
	if f.db != "" || f.rf.remote() || f.rf.tokenFile != "" {
		if err := checkTarget(&dbFlags{dir: f.db}, &f.rf, fl); err != nil {
			return fail(stderr, "compression", exitUsage, err)
		}
	}
	sizes, err := parseBlockSizes(f.blockSizes)
	if err != nil {
		return fail(stderr, "compression", exitUsage, err)
	}
	ctx, cancel := signalContext()
	defer cancel()
	fps, docs, err := f.read(ctx, stdin)
	if err != nil {
		return fail(stderr, "compression", exitFailed, err)
	}
	if len(fps) == 0 {
		return fail(stderr, "compression", exitFailed, errors.New("no fingerprints in the input: nothing to measure"))
	}
	rep, err := compression.Measure(fps, sizes)
	if err != nil {
		return fail(stderr, "compression", exitFailed, err)
	}
	if f.chart != "" {
		if err := drawCompression(f.chart, rep); err != nil {
			return fail(stderr, "compression", exitFailed, err)
		}
		fmt.Fprintf(stderr, "%s compression: chart written to %s\n", programName, f.chart)
	}
	if f.asJSON {
		b, _ := json.MarshalIndent(struct {
			Documents int `json:"documents"`
			*compression.Report
		}{docs, rep}, "", "  ")
		fmt.Fprintf(stdout, "%s\n", b)
		return exitOK
	}
	printCompression(stdout, docs, rep)
	return exitOK
}

// read returns the input's distinct fingerprints, sorted, and how many
// documents (lines) it held.
func (f *compressionFlags) read(ctx context.Context, stdin io.Reader) ([]uint64, int, error) {
	var fps []uint64
	if f.db != "" || f.rf.remote() {
		ix, closeIx, err := openIndex(&dbFlags{dir: f.db}, &f.rf, engine.Options{ReadOnly: true})
		if err != nil {
			return nil, 0, err
		}
		defer closeIx()
		for doc, err := range ix.Docs(ctx) {
			if err != nil {
				return nil, 0, err
			}
			fps = append(fps, doc.Fingerprint)
		}
	} else {
		paths, err := f.inputs.paths()
		if err != nil {
			return nil, 0, err
		}
		for _, p := range paths {
			if err := readFingerprints(ctx, p, stdin, &fps); err != nil {
				return nil, 0, err
			}
		}
	}
	docs := len(fps)
	slices.Sort(fps)
	return slices.Compact(fps), docs, nil
}

// readFingerprints appends the fingerprints of one input to fps: lines of
// find-all's input, or add's records.
func readFingerprints(ctx context.Context, path string, stdin io.Reader, fps *[]uint64) error {
	r, name, _, closeIn, err := openInput(ctx, path, stdin)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer closeIn()
	var syn lines.Syntax
	return scanLines(r, name, func(n int, line string, tooLong error) error {
		if tooLong != nil {
			return &inputError{name, n, tooLong}
		}
		fp, skip, err := syn.AnyFingerprint(line)
		if err != nil {
			return &inputError{name, n, err}
		}
		if !skip {
			*fps = append(*fps, fp)
		}
		return nil
	})
}

// parseBlockSizes reads --block-sizes.
func parseBlockSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < codec.MinBlockSize || n > codec.MaxBlockSize {
			return nil, fmt.Errorf("--block-sizes: %s is not a block size (%d..%d bytes)", quoteShort(f), codec.MinBlockSize, codec.MaxBlockSize)
		}
		out = append(out, n)
	}
	return out, nil
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = strconv.Itoa(x)
	}
	return strings.Join(s, ",")
}

// printCompression writes the report as a table.
func printCompression(w io.Writer, docs int, rep *compression.Report) {
	fmt.Fprintf(w, "%d fingerprints, %d distinct\n", docs, rep.N)
	fmt.Fprintf(w, "information bound: %.3f bits a fingerprint for %d uniformly drawn ones (fingerprints that cluster can go below it)\n\n", rep.Bound, rep.N)
	width := len("method")
	for _, r := range rep.Rows {
		width = max(width, len(r.Method))
	}
	fmt.Fprintf(w, "%-*s  %12s  %8s  %9s\n", width, "method", "bytes", "bits/fp", "vs bound")
	for _, r := range rep.Rows {
		fmt.Fprintf(w, "%-*s  %12d  %8.3f  %+8.2f%%\n", width, r.Method, r.Bytes, r.BitsPerFP, r.OverBound)
	}
}

// drawCompression draws the report's bits per fingerprint as bars, the
// uniform bound as a dashed line.
func drawCompression(path string, rep *compression.Report) error {
	labels := make([]string, len(rep.Rows))
	values := make([]float64, len(rep.Rows))
	hi := rep.Bound
	for i, r := range rep.Rows {
		labels[i], values[i] = fmt.Sprintf("%s: %.2f", r.Method, r.BitsPerFP), r.BitsPerFP
		hi = max(hi, r.BitsPerFP)
	}
	return chart.HBars(path, chart.Axes{Title: fmt.Sprintf("Bits per fingerprint, %d distinct (dashed: the bound for uniform ones, %.2f)", rep.N, rep.Bound),
		X: "bits per fingerprint"}, labels, values, rep.Bound, 0, hi*1.05) // from zero, so that bars compare by length
}
