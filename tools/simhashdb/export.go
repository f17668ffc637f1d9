package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/lines"
	"github.com/simhashdb/simhashdb/sketch"
	"github.com/simhashdb/simhashdb/textindex"
)

func runGet(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fl := newFlagSet("get", "--db DIR [--json] ID...",
		"  simhashdb get --db idx 17 42\n\n"+
			"Prints each document: <id> <fingerprint> <name>, or with --json {\"id\",\"name\",\"fp\"} a line.\n"+
			"An id that is not stored is reported on stderr (exit code 1).", stderr)
	var d dbFlags
	fl.StringVar(&d.dir, "db", "", "the index folder (required)")
	asJSON := fl.Bool("json", false, "one JSON object a document")
	var rf remoteFlags
	rf.register(fl)
	if code := parseFlags(fl, args); code >= 0 {
		return code
	}
	if err := checkTarget(&d, &rf, fl); err != nil {
		return fail(stderr, "get", exitUsage, err)
	}
	ids, err := parseIDs(fl.Args())
	if err != nil {
		return fail(stderr, "get", exitUsage, err)
	}
	ix, closeIx, err := openIndex(&d, &rf, engine.Options{ReadOnly: true})
	if err != nil {
		return fail(stderr, "get", exitFailed, err)
	}
	defer closeIx()
	code := exitOK
	enc := json.NewEncoder(stdout)
	for _, id := range ids {
		doc, err := ix.Get(context.Background(), id)
		if err != nil {
			if !errors.Is(err, engine.ErrNotFound) {
				return fail(stderr, "get", exitFailed, err)
			}
			code = fail(stderr, "get", exitFailed, fmt.Errorf("%d: not stored", id))
			continue
		}
		if *asJSON {
			enc.Encode(api.DocOf(doc))
		} else {
			fmt.Fprintln(stdout, recordLine(doc))
		}
	}
	return code
}

// parseIDs reads document ids given as arguments.
func parseIDs(args []string) ([]uint64, error) {
	if len(args) == 0 {
		return nil, errors.New("no ID given")
	}
	ids := make([]uint64, len(args))
	for i, a := range args {
		id, err := strconv.ParseUint(a, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("argument %d, %s: want a document id (an unsigned decimal integer)", i+1, quoteShort(a))
		}
		ids[i] = id
	}
	return ids, nil
}

// writeRecord writes doc as a line of add's input; a name that a line
// cannot carry as it is is reported and written trimmed.
func writeRecord(w io.Writer, doc engine.Doc, stderr io.Writer) error {
	if clean := strings.TrimSpace(strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(doc.Name)); clean != doc.Name {
		fmt.Fprintf(stderr, "%s export: document %d: name %s cannot be a line's end as it is: written as %s (--json keeps it)\n",
			programName, doc.ID, quoteShort(doc.Name), quoteShort(clean))
		doc.Name = clean
	}
	_, err := fmt.Fprintln(w, recordLine(doc))
	return err
}

// exportHeader is export's first line (lines.ExportHeader: the line's one
// home) with the index's text options read.
type exportHeader struct {
	Fingerprint *textindex.Schema `json:"fingerprint,omitempty"`
	// Sketch is the bytes of the sketch each record carries (after its
	// fingerprint, in hex), 0 for none: add builds an index that keeps
	// them.
	Sketch int `json:"sketch,omitempty"`
}

// exportHeaderLine is export's first line for an index of schema (nil:
// none kept) whose records carry sketches of sketch bytes.
func exportHeaderLine(schema *textindex.Schema, sketch int) string {
	h := lines.ExportHeader{Sketch: sketch}
	if schema != nil {
		h.Fingerprint, _ = json.Marshal(schema)
	}
	return h.Line()
}

// apply makes the header's options the flags' values, as if given; a flag
// given with another value contradicts the input. A nil header, or one
// without options, changes nothing.
func (h *exportHeader) apply(fl *flag.FlagSet) error {
	if h == nil || h.Fingerprint == nil {
		return nil
	}
	given := map[string]string{}
	fl.Visit(func(f *flag.Flag) { given[f.Name] = f.Value.String() })
	for name, v := range schemaFlags(*h.Fingerprint) {
		if g, ok := given[name]; ok && g != v {
			return fmt.Errorf("%w: --%s %s: the input was exported from an index with --%s %s", errConflict, name, g, name, v)
		}
		if err := fl.Set(name, v); err != nil {
			return fmt.Errorf("export header: --%s %s: %w", name, v, err)
		}
	}
	return nil
}

// peekExportHeader reads export's header if r starts with one, leaving it
// in r (add skips it as a comment, and line numbers stay right).
func peekExportHeader(r *bufio.Reader, name string) (*exportHeader, error) {
	b, err := r.Peek(len(lines.ExportHeaderPrefix))
	if err != nil || string(b) != lines.ExportHeaderPrefix {
		return nil, nil // not a header (or a short input, which the reading reports)
	}
	for n := len(lines.ExportHeaderPrefix); n <= r.Size(); n = min(2*n, r.Size()) {
		b, err = r.Peek(n)
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[:i]
			break
		}
		if err != nil || n == r.Size() {
			break
		}
	}
	lh, _, err := lines.ParseExportHeader(string(b))
	if err != nil {
		return nil, fmt.Errorf("%s:1: %w", name, err)
	}
	h := exportHeader{Sketch: lh.Sketch}
	if lh.Fingerprint != nil {
		h.Fingerprint = new(textindex.Schema)
		if err := json.Unmarshal(lh.Fingerprint, h.Fingerprint); err != nil {
			return nil, fmt.Errorf("%s:1: export header: fingerprint: %w", name, err)
		}
		if k := h.Fingerprint.Sketch; k != "" && k != sketch.Kind {
			return nil, fmt.Errorf("%s:1: export header: %w: %s, this build's %s", name, textindex.ErrSketchKind, k, sketch.Kind)
		}
	}
	return &h, nil
}

// recordLine is doc as a line of add's input: with its sketch in hex
// after the fingerprint, if it has one (lines.Syntax.Sketch reads it).
func recordLine(doc engine.Doc) string {
	line := fmt.Sprintf("%d %s", doc.ID, api.DocOf(doc).FP)
	if doc.Sketch != "" {
		line += fmt.Sprintf(" %x", doc.Sketch)
	}
	if doc.Name != "" {
		line += " " + doc.Name
	}
	return line
}

func runExport(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fl := newFlagSet("export", "--db DIR [--json] [--output FILE|-]",
		"  simhashdb export --db idx > docs.txt\n"+
			"  simhashdb export --db idx | simhashdb add --db idx-k4 --k 4   # rebuild with another K\n\n"+
			"Writes every document, by id, as add reads it: <id> <fingerprint> [name] a line, after a\n"+
			"first line '# simhashdb-export {...}' with the index's text options, which add keeps. A name\n"+
			"that lines cannot carry as it is (a line break, or spaces at its ends) is reported on\n"+
			"stderr with its id and written trimmed, line breaks as spaces; --json keeps it exact.", stderr)
	var d dbFlags
	fl.StringVar(&d.dir, "db", "", "the index folder (required)")
	asJSON := fl.Bool("json", false, `one JSON object a document: {"id","name","fp"}`)
	output := fl.String("output", "-", "where the documents go (- is standard output)")
	var rf remoteFlags
	rf.register(fl)
	if code := parseFlags(fl, args); code >= 0 {
		return code
	}
	if err := checkTarget(&d, &rf, fl); err != nil {
		return fail(stderr, "export", exitUsage, err)
	}
	if fl.NArg() > 0 {
		return fail(stderr, "export", exitUsage, fmt.Errorf("unexpected arguments %q", fl.Args()))
	}
	w, closeOut, err := openOutput(*output, stdout)
	if err != nil {
		return fail(stderr, "export", exitFailed, err)
	}
	ctx, stop := signalContext()
	defer stop()
	ix, closeIx, err := openIndex(&d, &rf, engine.Options{ReadOnly: true})
	if err != nil {
		closeOut()
		return fail(stderr, "export", exitFailed, err)
	}
	defer closeIx()
	enc := json.NewEncoder(w)
	if !*asJSON {
		// The index's text options, which add reads back (a comment to
		// other readers): the copy then fingerprints text as this does;
		// and whether its records carry sketches (without it, add would
		// read a sketch as part of a name).
		st, err := api.StatsOfIndex(ctx, ix)
		if err != nil {
			closeOut()
			return fail(stderr, "export", exitFailed, err)
		}
		if st.SketchSize > 0 || st.Fingerprint != nil {
			fmt.Fprintln(w, exportHeaderLine(st.Fingerprint, st.SketchSize))
		}
	}
	for doc, e := range ix.Docs(ctx) {
		if err = e; err != nil {
			break
		}
		if *asJSON {
			err = enc.Encode(api.DocOf(doc))
		} else {
			err = writeRecord(w, doc, stderr)
		}
		if err != nil {
			break
		}
	}
	if cerr := closeOut(); err == nil {
		err = cerr
	}
	if err != nil {
		return fail(stderr, "export", exitFailed, err)
	}
	return exitOK
}
