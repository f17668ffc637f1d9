package textindex

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/sketch"
)

// SchemaSetting names the setting (engine.DB.SetMeta) in which an index
// keeps its Schema.
const SchemaSetting = "simhashdb.fingerprint"

// Schema is how an index reads text: the fingerprint options it was
// created with, kept with it (SchemaSetting, as JSON; export's header
// carries it too), so that text is always added and queried as it was
// indexed. Its strings are those of simhashdb's flags of the same names.
type Schema struct {
	Shingle   int    `json:"shingle"`
	Weighting string `json:"weighting"` // tf, logtf or binary
	StopWords bool   `json:"stopwords"`
	Hash      string `json:"hash"` // xxhash or fnv1
	// HTML is absent in indexes created before it was stored: those take
	// the reading as given. Indexes that store Read do not store it.
	HTML *bool `json:"html,omitempty"`
	// Read and Pipeline are absent in indexes created before they were
	// stored, which read text (or HTML, as HTML says) with pipeline v1
	// (Settle).
	Read     string `json:"read,omitempty"` // auto, text, html or man
	Pipeline string `json:"pipeline,omitempty"`
	SkipNav  bool   `json:"skip_nav,omitempty"`
	// Sketch is the sketch.Kind of an index's sketches, absent in an
	// index without them.
	Sketch string `json:"sketch,omitempty"`
}

// NewSchema is the schema of a new text index: single words (Shingle),
// the latest pipeline, TF weights, xxHash, files read by their content.
func NewSchema() Schema {
	return Schema{Shingle: Shingle, Weighting: "tf", Hash: "xxhash", Read: simhash.ReadAuto.String(), Pipeline: simhash.LatestPipeline.String(), Sketch: sketch.Kind}
}

// ErrSketchKind is the error for sketches of another sketch.Kind than
// this build makes: compared with new ones, they would estimate nothing.
var ErrSketchKind = errors.New("textindex: the index's sketches are of another kind than this build makes")

// Settings is where an index keeps its schema (SchemaSetting): an
// *engine.DB, or a served index through package client.
type Settings interface {
	Meta(ctx context.Context, name string) ([]byte, error)
	SetMeta(ctx context.Context, name string, value []byte) error
}

// Check refuses db's sketches if s names another kind of them.
func (s Schema) Check(db *engine.DB) error { return s.checkSketches(Sketched(db)) }

// checkSketches refuses the sketches of an index that keeps them if s
// names another kind.
func (s Schema) checkSketches(sketched bool) error {
	if sketched && s.Sketch != "" && s.Sketch != sketch.Kind {
		return fmt.Errorf("%w: %s, this build's %s", ErrSketchKind, s.Sketch, sketch.Kind)
	}
	return nil
}

// Settle gives Read and Pipeline the values an index that does not store
// them has: text (or HTML, as HTML says), pipeline v1.
func (s *Schema) Settle() {
	if s.Read == "" {
		s.Read = simhash.ReadText.String()
		if s.HTML != nil && *s.HTML {
			s.Read = simhash.ReadHTML.String()
		}
	}
	if s.Pipeline == "" {
		s.Pipeline = "v1"
	}
}

// SchemaError names a field of a Schema whose value no fingerprinter
// takes, and what it takes.
type SchemaError struct {
	Field, Value, Want string
}

func (e *SchemaError) Error() string { return fmt.Sprintf("%s %q: want %s", e.Field, e.Value, e.Want) }

// Fingerprinter returns the fingerprinter the schema describes (after
// Settle); a field it cannot take is a *SchemaError.
func (s Schema) Fingerprinter() (*simhash.Fingerprinter, error) {
	s.Settle()
	o := simhash.Options{Shingle: s.Shingle, SkipNavigation: s.SkipNav}
	switch s.Weighting {
	case "tf":
	case "logtf":
		o.Weighting = simhash.LogTF
	case "binary":
		o.Weighting = simhash.Binary
	default:
		return nil, &SchemaError{"weighting", s.Weighting, "tf, logtf or binary"}
	}
	switch s.Hash {
	case "xxhash":
	case "fnv1":
		o.Hash = simhash.FNV1
	default:
		return nil, &SchemaError{"hash", s.Hash, "xxhash or fnv1"}
	}
	if s.StopWords {
		o.StopWords = simhash.EnglishStopWords()
	}
	if s.Shingle < 1 || s.Shingle > simhash.MaxShingle {
		return nil, &SchemaError{"shingle", fmt.Sprint(s.Shingle), fmt.Sprintf("1 to %d", simhash.MaxShingle)}
	}
	p, err := simhash.ParsePipeline(s.Pipeline)
	if err != nil {
		return nil, &SchemaError{"pipeline", s.Pipeline, "v1, v2 or v3"}
	}
	o.Pipeline = p
	if _, err := s.Reading(); err != nil {
		return nil, err
	}
	return simhash.New(o)
}

// Reading returns how the schema reads documents (after Settle); a value
// it cannot take is a *SchemaError.
func (s Schema) Reading() (simhash.Reading, error) {
	s.Settle()
	r, err := simhash.ParseReading(s.Read)
	if err != nil {
		return 0, &SchemaError{"read", s.Read, "auto, text, html or man"}
	}
	return r, nil
}

// Reader returns the Reader of db's documents as s reads them: with
// sketches if db keeps them.
func (s Schema) Reader(db *engine.DB) (*Reader, error) { return s.ReaderFor(db.SketchSize()) }

// ReaderFor is Reader for an index whose sketch size is sketchSize
// (engine.DB.SketchSize, a served index's Stats.SketchSize).
func (s Schema) ReaderFor(sketchSize int) (*Reader, error) {
	if err := s.checkSketches(sketchSize > 0); err != nil {
		return nil, err
	}
	f, err := s.Fingerprinter()
	if err != nil {
		return nil, err
	}
	reading, err := s.Reading()
	if err != nil {
		return nil, err
	}
	return NewReader(f, reading, sketchSize)
}

// LoadSchema returns the schema db keeps; ok is false for an index that
// keeps none (made before schemas were kept, or of fingerprints only).
func LoadSchema(ctx context.Context, db Settings) (s Schema, ok bool, err error) {
	v, err := db.Meta(ctx, SchemaSetting)
	if errors.Is(err, engine.ErrNotFound) {
		return Schema{}, false, nil
	}
	if err != nil {
		return Schema{}, false, err
	}
	if err := json.Unmarshal(v, &s); err != nil {
		return Schema{}, false, fmt.Errorf("%w: the index's schema (setting %s) %q: %w", engine.ErrCorrupt, SchemaSetting, v, err)
	}
	return s, true, nil
}

// Store keeps s with db (SchemaSetting).
func (s Schema) Store(ctx context.Context, db Settings) error {
	b, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return db.SetMeta(ctx, SchemaSetting, b)
}
