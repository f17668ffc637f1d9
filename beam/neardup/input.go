package neardup

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/fileio"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/simhashdb/simhashdb/internal/lines"
	"github.com/simhashdb/simhashdb/internal/pathid"
	"github.com/simhashdb/simhashdb/simhash"
)

// Doc is a document of the input: an id, a fingerprint and a name (a path,
// a URL; may be empty).
type Doc struct {
	ID   uint64
	FP   uint64
	Name string
}

// Query is a query of Batch's input.
type Query struct {
	Key string // file and line: unique over the input
	QID string // the JSON of its qid: the one given, else the line number
	FP  uint64
}

// The input formats of Read.
const (
	// FormatFingerprints: one fingerprint a line (decimal or 0x hex), or
	// "<id> <fingerprint> [name]"; a bare fingerprint's id is its line
	// number.
	FormatFingerprints = "fingerprints"
	// FormatJSONLines: one JSON object a line, {"id": N, "text": "..."},
	// the text read by its content (simhash.Fingerprinter.Document) with
	// Read's pipeline; without an id, the line number.
	FormatJSONLines = "jsonl"
	// FormatFiles: each file is a document, read by its content
	// (decompressed, HTML as its visible text) with Read's pipeline, as
	// simhashdb add --text reads it into an index without sketches
	// (--sketches=false: 2-word shingles; a text index fingerprints single
	// words and keeps sketches, which these jobs do not carry yet); its
	// name is its path and its id the
	// one add --text gives the path (pathid.Hash: 53 bits of its xxhash64;
	// add --text moves past a collision, which no other document here
	// can). A binary file, or one without words, is reported as bad and
	// left out.
	FormatFiles = "files"
)

// maxLine bounds an input line (a record with the longest name the engine
// stores, and room around it); a longer line is reported as bad.
const maxLine = 4096 + 256

// maxJSONLine bounds a JSON line of documents.
const maxJSONLine = 16 << 20

func init() {
	register.DoFn4x1[context.Context, fileio.ReadableFile, func(Doc), func(string), error](&readDocsFn{})
	beam.RegisterType(reflect.TypeOf((*readQueriesFn)(nil)).Elem())
	register.Emitter1[Doc]()
	register.Emitter1[Query]()
	register.Emitter1[string]()
	beam.RegisterType(reflect.TypeOf((*Doc)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*Query)(nil)).Elem())
}

// Read reads the documents of the files that glob matches (local, gs://,
// s3://: any of Beam's file systems the program links), in one of the
// Format* formats, text fingerprinted with pipeline. A malformed line is
// not a document: it is counted (CounterBad) and goes to bad as
// "FILE:LINE: problem".
func Read(s beam.Scope, glob, format string, pipeline simhash.Pipeline) (docs, bad beam.PCollection) {
	s = s.Scope("neardup.Read")
	files := fileio.ReadMatches(s, fileio.MatchFiles(s, glob, fileio.MatchEmptyAllow()), fileio.ReadUncompressed())
	return beam.ParDo2(s, &readDocsFn{Format: format, Pipeline: int(pipeline)}, files)
}

// ReadQueries reads Batch's queries from the files that glob matches: one
// a line, "<fingerprint>" or "<qid> <fingerprint>", as simhashdb batch
// reads them; blank lines and lines starting with # are skipped.
func ReadQueries(s beam.Scope, glob string) (queries, bad beam.PCollection) {
	s = s.Scope("neardup.ReadQueries")
	files := fileio.ReadMatches(s, fileio.MatchFiles(s, glob, fileio.MatchEmptyAllow()), fileio.ReadUncompressed())
	return beam.ParDo2(s, &readQueriesFn{}, files)
}

type readDocsFn struct {
	Format   string `json:"format"`
	Pipeline int    `json:"pipeline"`
	fp       *simhash.Fingerprinter
}

func (f *readDocsFn) ProcessElement(ctx context.Context, file fileio.ReadableFile, emit func(Doc), bad func(string)) error {
	name := file.Metadata.Path
	if f.fp == nil && f.Format != FormatFingerprints {
		fp, err := simhash.New(simhash.Options{Pipeline: simhash.Pipeline(f.Pipeline)})
		if err != nil {
			return err
		}
		f.fp = fp
	}
	r, err := file.Open(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer r.Close()
	if f.Format == FormatFiles {
		linesRead.Inc(ctx, 1)
		fp, err := f.fp.Document(r, simhash.ReadAuto)
		if errors.Is(err, simhash.ErrBinary) || errors.Is(err, simhash.ErrEmpty) {
			badLines.Inc(ctx, 1)
			bad(fmt.Sprintf("%s: %v: left out", name, err))
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		fingerprints.Inc(ctx, 1)
		emit(Doc{ID: pathid.Hash(name), FP: fp, Name: name})
		return nil
	}
	limit := maxLine
	if f.Format == FormatJSONLines {
		limit = maxJSONLine
	} else if f.Format != FormatFingerprints {
		return fmt.Errorf("neardup: unknown input format %q", f.Format)
	}
	var syn lines.Syntax
	return lines.Scan(r, name, limit, func(n int, line string, tooLong error) error {
		linesRead.Inc(ctx, 1)
		if n == 1 && tooLong == nil && f.Format == FormatFingerprints {
			// simhashdb export's header: it says whether the records
			// carry sketches, which these jobs leave out.
			if h, ok, err := lines.ParseExportHeader(line); ok {
				if err != nil {
					badLines.Inc(ctx, 1)
					bad(fmt.Sprintf("%s:%d: %v", name, n, err))
				}
				syn.Sketch = h.Sketch
				return nil
			}
		}
		doc, err := f.parse(syn, n, line, tooLong)
		if err != nil {
			badLines.Inc(ctx, 1)
			bad(fmt.Sprintf("%s:%d: %v", name, n, err))
			return nil
		}
		fingerprints.Inc(ctx, 1)
		emit(doc)
		return nil
	})
}

// parse reads a line; syn says whether records carry a sketch (an export
// of an index that keeps them), which is read and left out.
func (f *readDocsFn) parse(syn lines.Syntax, n int, line string, tooLong error) (Doc, error) {
	if tooLong != nil {
		return Doc{}, tooLong
	}
	if line == "" {
		return Doc{}, fmt.Errorf("empty line: want a fingerprint")
	}
	if f.Format == FormatJSONLines {
		var v struct {
			ID   *uint64 `json:"id"`
			Text *string `json:"text"`
		}
		if err := json.Unmarshal([]byte(line), &v); err != nil {
			return Doc{}, fmt.Errorf("want a JSON object {\"id\",\"text\"}: %v", err)
		}
		if v.Text == nil {
			return Doc{}, fmt.Errorf("no \"text\" field")
		}
		id := uint64(n)
		if v.ID != nil {
			id = *v.ID
		}
		fp, err := f.fp.Document(strings.NewReader(*v.Text), simhash.ReadAuto)
		if err != nil {
			return Doc{}, fmt.Errorf("\"text\": %w", err)
		}
		return Doc{ID: id, FP: fp}, nil
	}
	if fp, name, ok := (lines.Syntax{}).Named(line); ok { // simhashdb fingerprint's lines
		return Doc{ID: uint64(n), FP: fp, Name: name}, nil
	}
	if t := strings.TrimSpace(line); !strings.ContainsAny(t, " \t") {
		fp, err := lines.Fingerprint(t)
		return Doc{ID: uint64(n), FP: fp}, err
	}
	if syn.Sketch > 0 {
		id, fp, _, name, err := syn.SketchedRecord(line)
		return Doc{ID: id, FP: fp, Name: name}, err
	}
	id, fp, name, err := lines.Record(line)
	if err != nil {
		return Doc{}, err
	}
	return Doc{ID: id, FP: fp, Name: name}, nil
}

type readQueriesFn struct{}

func (f *readQueriesFn) ProcessElement(ctx context.Context, file fileio.ReadableFile, emit func(Query), bad func(string)) error {
	name := file.Metadata.Path
	r, err := file.Open(ctx)
	if err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	defer r.Close()
	return lines.Scan(r, name, maxLine, func(n int, line string, tooLong error) error {
		linesRead.Inc(ctx, 1)
		if tooLong == nil && isBlank(line) {
			return nil
		}
		err := tooLong
		var qid json.RawMessage
		var fp uint64
		if err == nil {
			qid, fp, err = lines.Query(line, n)
		}
		if err != nil {
			badLines.Inc(ctx, 1)
			bad(fmt.Sprintf("%s:%d: %v", name, n, err))
			return nil
		}
		fingerprints.Inc(ctx, 1)
		emit(Query{Key: fmt.Sprintf("%s:%d", name, n), QID: string(qid), FP: fp})
		return nil
	})
}

// isBlank tells the lines batch skips: empty, spaces, or a # comment.
func isBlank(line string) bool {
	for i := 0; i < len(line); i++ {
		switch line[i] {
		case ' ', '\t':
			continue
		case '#':
			return true
		}
		return false
	}
	return true
}
