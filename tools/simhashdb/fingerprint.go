package main

import (
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/simhashdb/simhashdb/simhash"
)

// fingerprintFlags are the fingerprinter's options as flags, shared by every
// command that fingerprints text.
type fingerprintFlags struct {
	shingle   int
	weighting string
	stopwords bool
	hash      string
}

func (ff *fingerprintFlags) register(fl *flag.FlagSet) {
	fl.IntVar(&ff.shingle, "shingle", simhash.DefaultShingle, "tokens per feature (moving window)")
	fl.StringVar(&ff.weighting, "weighting", "tf", "feature weights: tf, logtf or binary")
	fl.BoolVar(&ff.stopwords, "stopwords", false, "drop English stop words")
	fl.StringVar(&ff.hash, "hash", "xxhash", "feature hash: xxhash or fnv1")
}

func (ff *fingerprintFlags) fingerprinter() (*simhash.Fingerprinter, error) {
	o := simhash.Options{Shingle: ff.shingle}
	switch ff.weighting {
	case "tf":
	case "logtf":
		o.Weighting = simhash.LogTF
	case "binary":
		o.Weighting = simhash.Binary
	default:
		return nil, fmt.Errorf("--weighting %q: want tf, logtf or binary", ff.weighting)
	}
	switch ff.hash {
	case "xxhash":
	case "fnv1":
		o.Hash = simhash.FNV1
	default:
		return nil, fmt.Errorf("--hash %q: want xxhash or fnv1", ff.hash)
	}
	if ff.stopwords {
		o.StopWords = simhash.EnglishStopWords()
	}
	if ff.shingle == 0 {
		return nil, fmt.Errorf("--shingle 0: want 1 to %d", simhash.MaxShingle)
	}
	return simhash.New(o)
}

func runFingerprint(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := newFlagSet("fingerprint", "[flags] PATH...",
		"  simhashdb fingerprint README.md docs/      # one line per file: <16 hex digits><TAB><path>\n"+
			"  curl -s https://example.com | simhashdb fingerprint --html -", stderr)
	html := fl.Bool("html", false, "read input as HTML and fingerprint its visible text")
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
	f, err := ff.fingerprinter()
	if err != nil {
		fmt.Fprintf(stderr, "%s fingerprint: %v\n", programName, err)
		return exitUsage
	}
	sum := func(r io.Reader) (uint64, error) {
		if *html {
			return f.HTML(r)
		}
		return f.Reader(r)
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
		fmt.Fprintf(stdout, "%s\t%s\n", simhash.Format(fp), path)
	}
	for _, arg := range fl.Args() {
		if arg == "-" {
			one("-", stdin)
			continue
		}
		err := filepath.WalkDir(arg, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				fail(path, unwrapPathError(err))
				return nil // report and go on with the other files
			}
			if d.IsDir() || !d.Type().IsRegular() && d.Type()&fs.ModeSymlink == 0 { // skip devices, sockets, pipes
				return nil
			}
			file, err := os.Open(path)
			if err != nil {
				fail(path, unwrapPathError(err))
				return nil
			}
			defer file.Close()
			one(path, file)
			return nil
		})
		if err != nil {
			fail(arg, err)
		}
	}
	return code
}

// unwrapPathError drops the operation and path of an *fs.PathError, since
// the message already names the path.
func unwrapPathError(err error) error {
	if pe, ok := err.(*fs.PathError); ok {
		return pe.Err
	}
	return err
}
