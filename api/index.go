package api

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/textindex"
)

// Index is the operations of an index of fingerprints, as the embedded
// engine (*engine.DB) and a served one (*client.Client) both give them:
// a program, or a command, written against Index works with either. Every
// call takes a context and stops when it is done; errors match the
// engine's sentinels on both sides (errors.Is(err, engine.ErrNotFound)).
type Index interface {
	// Insert stores d under its id, replacing any document with it.
	Insert(ctx context.Context, d engine.Doc) error
	// InsertBatch stores docs in one commit (the client: in commits of
	// its Options.BatchLines).
	InsertBatch(ctx context.Context, docs []engine.Doc) error
	// InsertIfNew stores d unless a stored document lies within k of it,
	// and returns those that do.
	InsertIfNew(ctx context.Context, d engine.Doc, k int) (duplicates []engine.Match, inserted bool, err error)
	// Get returns the document id, or engine.ErrNotFound.
	Get(ctx context.Context, id uint64) (engine.Doc, error)
	// Delete removes the documents ids; those not stored are left alone.
	Delete(ctx context.Context, ids ...uint64) error
	// Query returns the documents within distance k of fp, nearest first.
	Query(ctx context.Context, fp uint64, k int) ([]engine.Match, error)
	// QueryFingerprints appends to dst the distinct stored fingerprints
	// within distance k of fp, nearest first, without their documents.
	QueryFingerprints(ctx context.Context, dst []engine.Near, fp uint64, k int) ([]engine.Near, error)
	// QueryBatch answers many queries, in order.
	QueryBatch(ctx context.Context, queries []uint64, k int) iter.Seq2[engine.BatchResult, error]
	// Docs streams every document, by id.
	Docs(ctx context.Context) iter.Seq2[engine.Doc, error]
	// FindAll streams every pair of documents within distance k.
	FindAll(ctx context.Context, k int) iter.Seq2[engine.Pair, error]
	// Clusters streams the connected components of the pairs within k.
	Clusters(ctx context.Context, k int) iter.Seq2[[]engine.Doc, error]
	// Stars streams clusters of a centre and the documents within k of it.
	Stars(ctx context.Context, k int) iter.Seq2[[]engine.Doc, error]
	// Stats returns the index's statistics (a *engine.StatsError beside
	// those a damaged index can give).
	Stats(ctx context.Context) (engine.Stats, error)
	// Check verifies every stored byte; damage matches engine.ErrCorrupt.
	Check(ctx context.Context) (engine.CheckReport, error)
}

var _ Index = (*engine.DB)(nil)

// Verifier is what an index of text (one that keeps sketches: package
// textindex) answers besides Index: the pairs and clusters of documents
// within k whose sketches estimate a Jaccard similarity of at least
// similarity. Embedded and *client.Client give it.
type Verifier interface {
	// InsertIfNewSimilar stores d (with its sketch) unless a stored
	// document lies within k of it with an estimated similarity of at
	// least similarity, and returns those that do.
	InsertIfNewSimilar(ctx context.Context, d engine.Doc, k int, similarity float64) (duplicates []textindex.Match, inserted bool, err error)
	Pairs(ctx context.Context, k int, similarity float64) iter.Seq2[textindex.Pair, error]
	VerifiedClusters(ctx context.Context, k int, similarity float64, star bool) iter.Seq2[[]engine.Doc, error]
}

// Embedded is an index opened in this process, as an Index and a
// Verifier.
type Embedded struct {
	*engine.DB
	// Join is how its Pairs and VerifiedClusters join an index of text
	// whose records carry band keys.
	Join textindex.JoinOptions
}

var _ interface {
	Index
	Verifier
	SchemaKeeper
} = Embedded{}

// InsertIfNewSimilar is textindex.InsertIfNew into the index.
func (e Embedded) InsertIfNewSimilar(ctx context.Context, d engine.Doc, k int, similarity float64) ([]textindex.Match, bool, error) {
	return textindex.InsertIfNew(ctx, e.DB, d, k, similarity)
}

// Pairs is textindex.PairsWith of the index, with e.Join.
func (e Embedded) Pairs(ctx context.Context, k int, similarity float64) iter.Seq2[textindex.Pair, error] {
	return textindex.PairsWith(ctx, e.DB, k, similarity, e.Join)
}

// VerifiedClusters is textindex.Clusters of the index, or with star
// textindex.Stars, their pairs joined with e.Join.
func (e Embedded) VerifiedClusters(ctx context.Context, k int, similarity float64, star bool) iter.Seq2[[]engine.Doc, error] {
	if star {
		return textindex.StarsWith(ctx, e.DB, k, similarity, e.Join)
	}
	return textindex.ClustersWith(ctx, e.DB, k, similarity, e.Join)
}

// StatsOfIndex is ix's statistics with the text options of an index that
// keeps them (the figures a damaged index can give, as StatsOf says).
func StatsOfIndex(ctx context.Context, ix Index) (Stats, error) {
	st, statsErr := ix.Stats(ctx)
	var sc *textindex.Schema
	if sk, ok := ix.(SchemaKeeper); ok {
		var err error
		if sc, err = sk.TextSchema(ctx); err != nil {
			return Stats{}, err
		}
	}
	return StatsOf(st, sc, statsErr)
}

// SchemaKeeper gives the text options an index of text keeps (nil in an
// index of fingerprints): how a copy of it must read text. Embedded and
// *client.Client give them.
type SchemaKeeper interface {
	TextSchema(ctx context.Context) (*textindex.Schema, error)
}

// TextSchema is the text options the index keeps, nil in an index of
// fingerprints.
func (e Embedded) TextSchema(ctx context.Context) (*textindex.Schema, error) {
	sc, ok, err := textindex.LoadSchema(ctx, e.DB)
	if err != nil || !ok {
		return nil, err
	}
	return &sc, nil
}

// KeepSetting stores value under the setting name in db unless db keeps
// that setting already: with the same value it is left as it is, with
// another it is refused (an error matching engine.ErrInput), since a
// setting says how the stored documents were made (how text is read, how
// paths name documents) and changing it under them would make new
// documents unlike them. Its callers serialise it: the server, and a
// replicated index's nodes applying their stream.
func KeepSetting(ctx context.Context, db *engine.DB, name string, value []byte) error {
	old, err := db.Meta(ctx, name)
	switch {
	case err == nil && !bytes.Equal(old, value):
		return fmt.Errorf("%w: setting %q is kept already, with another value: a served index's settings are not changed", engine.ErrInput, name)
	case errors.Is(err, engine.ErrNotFound):
		return db.SetMeta(ctx, name, value)
	}
	return err
}
