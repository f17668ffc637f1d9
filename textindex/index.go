package textindex

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"

	"github.com/simhashdb/simhashdb/engine"
)

// ErrNoSchema is Open's error for an existing index that keeps no Schema
// (one of fingerprints, or made before schemas were kept) when none is
// given: how it reads text is unknown.
var ErrNoSchema = errors.New("textindex: the index keeps no schema: give the one it was made with")

// Index is an engine index with the Schema it reads text by: documents are
// added and asked about as text, read as the index was made to read them.
// Its methods are safe for concurrent use.
type Index struct {
	// DB is the engine index, for what Index does not wrap (Get, Delete,
	// Stats, Flush, queries by fingerprint).
	DB     *engine.DB
	schema Schema
	reader *Reader
}

// Open opens the index in dir, creating it if absent. A new index is a
// text index (Options(opts): sketches, K unless opts sets one) that keeps
// schema, or NewSchema() when schema is nil. An existing index reads
// text by the schema it keeps; schema, if not nil, must be that one. An
// existing index that keeps none needs schema (ErrNoSchema without), and
// answers with sketches only if it keeps them.
func Open(ctx context.Context, dir string, opts engine.Options, schema *Schema) (*Index, error) {
	existed, err := engine.Exists(dir)
	if err != nil {
		return nil, err
	}
	if !existed {
		opts = Options(opts)
	}
	db, err := engine.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	ix, err := open(ctx, db, existed, schema)
	if err != nil {
		db.Close()
		return nil, err
	}
	return ix, nil
}

func open(ctx context.Context, db *engine.DB, existed bool, given *Schema) (*Index, error) {
	stored, ok, err := LoadSchema(ctx, db)
	if err != nil {
		return nil, err
	}
	if given != nil && !Sketched(db) {
		// An index without sketches keeps no sketch kind.
		g := *given
		g.Sketch = ""
		given = &g
	}
	var s Schema
	switch {
	case ok && given != nil && *given != stored:
		return nil, fmt.Errorf("%w: the index keeps schema %+v, Open was given %+v", engine.ErrOptions, stored, *given)
	case ok:
		s = stored
	case given != nil:
		s = *given
	case existed:
		return nil, ErrNoSchema
	default:
		s = NewSchema()
		if !Sketched(db) {
			s.Sketch = ""
		}
	}
	if !ok && !existed {
		if err := s.Store(ctx, db); err != nil {
			return nil, err
		}
	}
	rd, err := s.Reader(db)
	if err != nil {
		return nil, err
	}
	return &Index{DB: db, schema: s, reader: rd}, nil
}

// Schema returns how the index reads text.
func (ix *Index) Schema() Schema { return ix.schema }

// Reader returns the index's Reader.
func (ix *Index) Reader() *Reader { return ix.reader }

// Close closes the engine index.
func (ix *Index) Close() error { return ix.DB.Close() }

// Add reads a document from r and stores it under id, replacing any with
// that id. Its reading errors are Reader.Read's.
func (ix *Index) Add(ctx context.Context, id uint64, name string, r io.Reader) error {
	d, err := ix.doc(id, name, r)
	if err != nil {
		return err
	}
	return ix.DB.Insert(ctx, d)
}

// AddString is Add of a text held in a string.
func (ix *Index) AddString(ctx context.Context, id uint64, name, text string) error {
	return ix.Add(ctx, id, name, strings.NewReader(text))
}

// InsertIfNew is the crawler's decision about a document read from r: it
// stores it under id unless a stored one is its near-duplicate (within
// the index's K and, with sketches, at least threshold similar), which it
// returns instead. Calls are atomic with respect to each other.
func (ix *Index) InsertIfNew(ctx context.Context, id uint64, name string, r io.Reader, threshold float64) ([]Match, bool, error) {
	d, err := ix.doc(id, name, r)
	if err != nil {
		return nil, false, err
	}
	if d.Sketch == "" {
		ms, inserted, err := ix.DB.InsertIfNew(ctx, d, ix.DB.K())
		return unverified(ms), inserted, err
	}
	return InsertIfNew(ctx, ix.DB, d, ix.DB.K(), threshold)
}

// Similar returns the stored near-duplicates of the document read from r:
// those within the index's K and, with sketches, at least threshold
// similar (Verify's order); without sketches, by distance (Similarity 0).
func (ix *Index) Similar(ctx context.Context, r io.Reader, threshold float64) ([]Match, error) {
	if err := CheckSimilarity(ix.DB.SketchSize(), threshold); err != nil {
		return nil, err
	}
	fp, sk, err := ix.reader.Read(r)
	if err != nil {
		return nil, err
	}
	ms, err := ix.DB.Query(ctx, fp, ix.DB.K())
	if err != nil || sk == "" {
		return unverified(ms), err
	}
	return Verify(ms, sk, threshold), nil
}

// Pairs is Pairs of the index within its K; without sketches, every pair
// within K with Similarity 0.
func (ix *Index) Pairs(ctx context.Context, threshold float64) iter.Seq2[Pair, error] {
	if !Sketched(ix.DB) {
		return func(yield func(Pair, error) bool) {
			for p, err := range ix.DB.FindAll(ctx, ix.DB.K()) {
				if !yield(Pair{Pair: p}, err) || err != nil {
					return
				}
			}
		}
	}
	return Pairs(ctx, ix.DB, ix.DB.K(), threshold)
}

// Clusters is Clusters of the index within its K (engine.DB.Clusters
// without sketches).
func (ix *Index) Clusters(ctx context.Context, threshold float64) iter.Seq2[[]engine.Doc, error] {
	if !Sketched(ix.DB) {
		return ix.DB.Clusters(ctx, ix.DB.K())
	}
	return Clusters(ctx, ix.DB, ix.DB.K(), threshold)
}

// doc reads a document.
func (ix *Index) doc(id uint64, name string, r io.Reader) (engine.Doc, error) {
	fp, sk, err := ix.reader.Read(r)
	if err != nil {
		return engine.Doc{}, err
	}
	return engine.Doc{ID: id, Fingerprint: fp, Name: name, Sketch: sk}, nil
}

// unverified wraps matches found by distance alone.
func unverified(ms []engine.Match) []Match {
	var out []Match
	for _, m := range ms {
		out = append(out, Match{Match: m})
	}
	return out
}
