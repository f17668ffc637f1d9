package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"strings"

	"github.com/simhashdb/simhashdb/internal/lines"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/sketch"
	"github.com/simhashdb/simhashdb/textindex"
)

// fingerprintFlags are the fingerprinter's options as flags, shared by every
// command that fingerprints text.
type fingerprintFlags struct {
	shingle   int
	weighting string
	stopwords bool
	hash      string
	html      bool
	read      string
	pipeline  string
	skipNav   bool
}

// fingerprintFlagNames are the flags of fingerprintFlags: an index stores
// their values at creation (see withIndex).
var fingerprintFlagNames = []string{"pipeline", "read", "skip-nav", "shingle", "weighting", "stopwords", "hash", "html"}

func (ff *fingerprintFlags) register(fl *flag.FlagSet) {
	fl.BoolVar(&ff.html, "html", false, "read text as HTML and fingerprint its visible text (--read html)")
	fl.StringVar(&ff.read, "read", "auto", "how files are read: auto (by content: gzip and bzip2 decompressed, HTML known by its start; with pipeline v3 also XML and manual pages' roff), text, html or man; binaries and files without words are reported, not fingerprinted")
	fl.StringVar(&ff.pipeline, "pipeline", simhash.LatestPipeline.String(), "the fingerprint pipeline: v3 (numbers weigh 0.1 in long documents, more in short ones; XML and man pages read by content), v2 (that of indexes made before v3: numbers weigh 0.1) or v1 (before v2)")
	fl.BoolVar(&ff.skipNav, "skip-nav", false, "read HTML without its navigation (nav, aside, the page's header and footer, ARIA navigation landmarks): for sites whose menus change between releases")
	fl.IntVar(&ff.shingle, "shingle", simhash.DefaultShingle, "tokens per feature (moving window)")
	fl.StringVar(&ff.weighting, "weighting", "tf", "feature weights: tf, logtf or binary")
	fl.BoolVar(&ff.stopwords, "stopwords", false, "drop English stop words")
	fl.StringVar(&ff.hash, "hash", "xxhash", "feature hash: xxhash or fnv1")
}

func (ff *fingerprintFlags) fingerprinter() (*simhash.Fingerprinter, error) {
	st, err := ff.schema()
	if err != nil {
		return nil, err
	}
	f, err := st.Fingerprinter()
	return f, flagError(err)
}

// flagError names the flag of a *textindex.SchemaError: the schema's
// fields are the flags of the same names.
func flagError(err error) error {
	if se, ok := errors.AsType[*textindex.SchemaError](err); ok {
		return fmt.Errorf("--%s %q: want %s", se.Field, se.Value, se.Want)
	}
	return err
}

func (ff *fingerprintFlags) reading() (simhash.Reading, error) {
	if ff.html {
		return simhash.ReadHTML, nil
	}
	r, err := simhash.ParseReading(ff.read)
	if err != nil {
		return 0, fmt.Errorf("--read %q: want auto, text, html or man", ff.read)
	}
	return r, nil
}

// textReader returns the reader of an index's documents: its schema (ff,
// after withIndex), and sketches as the index keeps them (sketchSize).
func (ff *fingerprintFlags) textReader(sketchSize int) (*textindex.Reader, error) {
	st, err := ff.schema()
	if err != nil {
		return nil, err
	}
	rd, err := st.ReaderFor(sketchSize)
	return rd, flagError(err)
}

// schema returns ff as a new index keeps it.
func (ff *fingerprintFlags) schema() (textindex.Schema, error) {
	r, err := ff.reading()
	if err != nil {
		return textindex.Schema{}, err
	}
	return textindex.Schema{Shingle: ff.shingle, Weighting: ff.weighting, StopWords: ff.stopwords, Hash: ff.hash,
		Read: r.String(), Pipeline: ff.pipeline, SkipNav: ff.skipNav}, nil
}

// schemaFlags returns st as the values of fingerprintFlags' flags.
func schemaFlags(st textindex.Schema) map[string]string {
	st.Settle()
	return map[string]string{"shingle": strconv.Itoa(st.Shingle), "weighting": st.Weighting,
		"stopwords": strconv.FormatBool(st.StopWords), "hash": st.Hash, "read": st.Read,
		"pipeline": st.Pipeline, "html": strconv.FormatBool(st.Read == "html"), "skip-nav": strconv.FormatBool(st.SkipNav)}
}

// schemaString is st as flags, in a stable order.
func schemaString(st textindex.Schema) string {
	m := schemaFlags(st)
	var out []string
	for _, n := range fingerprintFlagNames {
		if v, ok := m[n]; ok && n != "html" { // --read says it
			out = append(out, "--"+n+" "+v)
		}
	}
	return strings.Join(out, " ")
}

// withIndex makes ff the fingerprint options of the index ix, whose
// sketches are of sketchSize bytes: those it was created with, which a
// new index (created) stores now. A flag given on the command
// line that differs from them is an error, so that text is never queried
// or added with other options than the index's. An index created before
// the options were stored takes the flags as given.
func (ff *fingerprintFlags) withIndex(ctx context.Context, ix textindex.Settings, sketchSize int, fl *flag.FlagSet, created bool) error {
	st, ok, err := textindex.LoadSchema(ctx, ix)
	if err != nil {
		return err
	}
	if !ok {
		if !created {
			// Made before any option was stored: text, pipeline v1,
			// unless the flags say otherwise.
			given := map[string]bool{}
			fl.Visit(func(f *flag.Flag) { given[f.Name] = true })
			if !given["pipeline"] {
				ff.pipeline = "v1"
			}
			if !given["read"] {
				ff.read = "text"
			}
			return nil
		}
		st, err := ff.schema()
		if err != nil {
			return err
		}
		if sketchSize > 0 {
			st.Sketch = sketch.Kind
		}
		return st.Store(ctx, ix)
	}
	if _, err := st.ReaderFor(sketchSize); err != nil {
		return err
	}
	stored := schemaFlags(st)
	var conflicts []string
	fl.Visit(func(f *flag.Flag) {
		if want, ok := stored[f.Name]; ok && f.Value.String() != want {
			conflicts = append(conflicts, fmt.Sprintf("--%s %s (the index's is %s)", f.Name, f.Value, want))
		}
	})
	if len(conflicts) > 0 {
		return fmt.Errorf("%w: %s: the index fingerprints text as it was created to; leave these flags out", errConflict, strings.Join(conflicts, ", "))
	}
	st.Settle()
	ff.shingle, ff.weighting, ff.stopwords, ff.hash = st.Shingle, st.Weighting, st.StopWords, st.Hash
	ff.read, ff.pipeline, ff.html, ff.skipNav = st.Read, st.Pipeline, false, st.SkipNav
	return nil
}

// errConflict marks a flag that contradicts the index: a usage error.
var errConflict = errors.New("conflicting flags")

func runFingerprint(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := newFlagSet("fingerprint", "[flags] PATH...",
		"  simhashdb fingerprint README.md docs/      # one line per file: 0x<16 hex digits><TAB><path>\n"+
			"  curl -s https://example.com | simhashdb fingerprint --html -\n"+
			"  simhashdb fingerprint --db idx page.html  # as the index fingerprints text (a text index: single words)\n\n"+walkHelp, stderr)
	asJSON := fl.Bool("json", false, `one JSON object a file: {"path":..,"fp":"0x.."}`)
	dbDir := fl.String("db", "", "fingerprint as this index does, with the options it keeps (the other fingerprint flags must agree)")
	var rf remoteFlags
	rf.register(fl)
	var ff fingerprintFlags
	ff.register(fl)
	if code := parseFlags(fl, args); code >= 0 {
		return code
	}
	if fl.NArg() == 0 {
		fmt.Fprintf(stderr, "%s fingerprint: no PATH given (use - for standard input)\n", programName)
		fl.Usage()
		return exitUsage
	}
	if *dbDir != "" || rf.remote() || rf.tokenFile != "" {
		d := dbFlags{dir: *dbDir}
		if err := checkTarget(&d, &rf, fl); err != nil {
			return fail(stderr, "fingerprint", exitUsage, err)
		}
		ctx := context.Background()
		settings, sketchSize, closeIx, err := openSettings(ctx, &d, &rf)
		if err != nil {
			return fail(stderr, "fingerprint", exitFailed, err)
		}
		err = ff.withIndex(ctx, settings, sketchSize, fl, false)
		closeIx()
		if err != nil {
			return fail(stderr, "fingerprint", usageOr(err), err)
		}
	}
	f, err := ff.fingerprinter()
	if err != nil {
		fmt.Fprintf(stderr, "%s fingerprint: %v\n", programName, err)
		return exitUsage
	}
	sum := func(r io.Reader) (uint64, error) {
		return ff.sum(f, r)
	}
	code := exitOK
	fail := func(path string, err error) {
		fmt.Fprintf(stderr, "%s fingerprint: %s: %v\n", programName, path, err)
		code = exitFailed
	}
	one := func(path string, r io.Reader) {
		fp, err := sum(r)
		if err != nil {
			fail(path, err)
			return
		}
		if *asJSON {
			b, _ := json.Marshal(struct {
				Path string `json:"path"`
				FP   string `json:"fp"`
			}{path, simhash.Format(fp)})
			fmt.Fprintf(stdout, "%s\n", b)
			return
		}
		fmt.Fprintf(stdout, "%s\t%s\n", simhash.Format(fp), lines.NameField(path))
	}
	for _, arg := range fl.Args() {
		if arg == "-" {
			one("-", stdin)
			continue
		}
		err := walkFiles(arg, nil, func(path string) error {
			file, err := os.Open(path)
			if err != nil {
				fail(path, unwrapPathError(err))
				return nil
			}
			defer file.Close()
			one(docName(path), file)
			return nil
		}, fail)
		if err != nil {
			fail(arg, err)
		}
	}
	return code
}

// sum fingerprints the document read from r with f, read as ff says.
func (ff *fingerprintFlags) sum(f *simhash.Fingerprinter, r io.Reader) (uint64, error) {
	reading, err := ff.reading()
	if err != nil {
		return 0, err
	}
	return f.Document(r, reading)
}

// unwrapPathError drops the operation and path of an *fs.PathError, since
// the message already names the path.
func unwrapPathError(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
