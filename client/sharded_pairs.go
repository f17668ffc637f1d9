package client

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/textindex"
)

// This file holds the answers about every pair of a sharded index's
// documents: each shard's own pairs, and those across two shards.

// FindAll streams every pair of documents within k, each once with
// A.ID < B.ID: each shard's own pairs, then those across two shards, found
// by querying each document of one shard against the other's tables. In
// an index of text, those the sketches verify, as Client.FindAll gives
// them (Pairs from textindex.DefaultSimilarity).
func (s *Sharded) FindAll(ctx context.Context, k int) iter.Seq2[engine.Pair, error] {
	return func(yield func(engine.Pair, error) bool) {
		st, err := s.shards[0].Stats(ctx)
		if err != nil && !errors.As(err, new(*engine.StatsError)) {
			yield(engine.Pair{}, fmt.Errorf("shard 0: %w", err))
			return
		}
		var sim *float64
		if textindex.SketchedSize(st.SketchSize) {
			d := textindex.DefaultSimilarity
			sim = &d
		}
		for p, err := range s.pairs(ctx, k, sim) {
			if !yield(p.Pair, err) || err != nil {
				return
			}
		}
	}
}

// Pairs streams the pairs within k whose documents' sketches estimate a
// similarity of at least similarity (an index of text: Client.Pairs):
// each shard's, then those across two shards, verified here from the
// sketches their documents carry.
func (s *Sharded) Pairs(ctx context.Context, k int, similarity float64) iter.Seq2[textindex.Pair, error] {
	return s.pairs(ctx, k, &similarity)
}

// pairs is FindAll, or with a similarity Pairs. Shards of text whose
// records carry band keys are joined as one index joins its own
// (textindex.PairsOf over every shard's documents): a pair across two
// shards at any distance, as one index finds it.
func (s *Sharded) pairs(ctx context.Context, k int, similarity *float64) iter.Seq2[textindex.Pair, error] {
	return func(yield func(textindex.Pair, error) bool) {
		if similarity != nil {
			st, err := s.shards[0].Stats(ctx)
			if err != nil && !errors.As(err, new(*engine.StatsError)) {
				yield(textindex.Pair{}, fmt.Errorf("shard 0: %w", err))
				return
			}
			if _, banded := textindex.MinSimilarityOfSize(st.SketchSize); banded {
				for p, err := range textindex.PairsOf(ctx, s.allDocs, st.SketchSize, *similarity, textindex.JoinOptions{}) {
					if !yield(p, err) || err != nil {
						return
					}
				}
				return
			}
		}
		for i, c := range s.shards {
			var own iter.Seq2[textindex.Pair, error]
			if similarity != nil {
				own = c.Pairs(ctx, k, *similarity)
			} else {
				own = func(yield func(textindex.Pair, error) bool) {
					for p, err := range c.FindAll(ctx, k) {
						if !yield(textindex.Pair{Pair: p}, err) {
							return
						}
					}
				}
			}
			for p, err := range own {
				if err != nil {
					err = fmt.Errorf("shard %d: %w", i, err)
				}
				if !yield(p, err) || err != nil {
					return
				}
			}
		}
		for i, a := range s.shards {
			for j := i + 1; j < len(s.shards); j++ {
				if !s.across(ctx, a, s.shards[j], k, similarity, yield) {
					return
				}
			}
		}
	}
}

// allDocs streams every shard's documents, one shard after the other.
func (s *Sharded) allDocs(ctx context.Context) iter.Seq2[engine.Doc, error] {
	return func(yield func(engine.Doc, error) bool) {
		for i, c := range s.shards {
			for d, err := range c.Docs(ctx) {
				if err != nil {
					err = fmt.Errorf("shard %d: %w", i, err)
				}
				if !yield(d, err) || err != nil {
					return
				}
			}
		}
	}
}

// across yields the pairs within k of a document of a and one of b (with
// a similarity, those their sketches verify); false when the caller
// stopped or an error was yielded.
func (s *Sharded) across(ctx context.Context, a, b *Client, k int, similarity *float64, yield func(textindex.Pair, error) bool) bool {
	var docs []engine.Doc
	flush := func() bool {
		fps := make([]uint64, len(docs))
		for i, d := range docs {
			fps[i] = d.Fingerprint
		}
		for r, err := range b.QueryBatch(ctx, fps, k) {
			if err != nil {
				yield(textindex.Pair{}, err)
				return false
			}
			for _, m := range r.Matches {
				p := textindex.Pair{Pair: engine.Pair{A: docs[r.Index], B: m.Doc, Distance: m.Distance}}
				if p.A.ID > p.B.ID {
					p.A, p.B = p.B, p.A
				}
				if similarity != nil {
					if p.Similarity, _ = textindex.Similarity(p.A.Sketch, p.B.Sketch); p.Similarity < *similarity {
						continue
					}
				}
				if !yield(p, nil) {
					return false
				}
			}
		}
		docs = docs[:0]
		return true
	}
	for d, err := range a.Docs(ctx) {
		if err != nil {
			yield(textindex.Pair{}, err)
			return false
		}
		if docs = append(docs, d); len(docs) == s.o.BatchLines && !flush() {
			return false
		}
	}
	return len(docs) == 0 || flush()
}

// Clusters streams the connected components of the pairs within k
// (FindAll's), each as its documents by id, the clusters by their
// smallest id; documents with no neighbour are left out, as the engine's
// Clusters does. Its memory grows with the documents in pairs
// (textindex.Group), and its time with the pairs (the engine's works
// over distinct fingerprints).
func (s *Sharded) Clusters(ctx context.Context, k int) iter.Seq2[[]engine.Doc, error] {
	return textindex.Group(s.FindAll(ctx, k), false)
}

// Stars streams the engine's stars (engine.DB.Stars) of the pairs within
// k: the documents taken by id, each not yet in a star leads one and
// takes every document within k of it not yet taken.
func (s *Sharded) Stars(ctx context.Context, k int) iter.Seq2[[]engine.Doc, error] {
	return textindex.Group(s.FindAll(ctx, k), true)
}

// VerifiedClusters is textindex.Clusters, or with star textindex.Stars,
// over every shard: the groups of Pairs.
func (s *Sharded) VerifiedClusters(ctx context.Context, k int, similarity float64, star bool) iter.Seq2[[]engine.Doc, error] {
	return textindex.Group(func(yield func(engine.Pair, error) bool) {
		for p, err := range s.Pairs(ctx, k, similarity) {
			if !yield(p.Pair, err) || err != nil {
				return
			}
		}
	}, star)
}
