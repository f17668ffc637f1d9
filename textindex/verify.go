package textindex

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"maps"
	"slices"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/join"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/sketch"
)

const (
	// DefaultSimilarity is the estimated Jaccard similarity (of the
	// documents' 5-word shingles) from which two documents are
	// near-duplicates. The quality bench calls a pair near from 0.9 and
	// unrelated below 0.5; the sketch's estimate errs by about 0.03 at 0.9
	// and 0.06 at 0.5 (one standard deviation), so 0.7 lies more than six
	// deviations below the first and three above the second.
	DefaultSimilarity = 0.7
	// K is the distance within which a new text index's queries propose
	// candidates: fingerprints of single words within six bits held every
	// near pair of the quality bench's collections. Its tables
	// (permutation.ForCandidates) find every fingerprint within K-1 bits
	// and most at K.
	K = 6
	// Shingle is the fingerprint's shingle of a new text index: single
	// words, the fingerprint of most recall.
	Shingle = 1
)

// Options is OptionsAt(o, DefaultSimilarity).
func Options(o engine.Options) engine.Options {
	o, _ = OptionsAt(o, DefaultSimilarity) // DefaultSimilarity has a layout
	return o
}

// OptionsAt returns o as a new text index needs it to be asked for
// similarities from minSimilarity on: each document's record (its sketch,
// then the band keys of sketch.LayoutFor(minSimilarity), from which Pairs
// finds candidates in time linear in the documents), K unless o sets one,
// and unless o sets a Design, tables that propose candidates to a query
// for the sketches to verify (permutation.ForCandidates: at K = 6, 12
// tables where finding every fingerprint within 6 bits would take 28).
func OptionsAt(o engine.Options, minSimilarity float64) (engine.Options, error) {
	l, err := sketch.LayoutFor(minSimilarity)
	if err != nil {
		return o, fmt.Errorf("%w: %w", engine.ErrOptions, err)
	}
	o.SketchSize = l.RecordSize()
	if o.K == 0 {
		o.K = K
	}
	//lint:ignore SA1019 the engine still reads Expected when SizeHint is 0
	n := cmp.Or(o.SizeHint, o.Expected, engine.DefaultSizeHint)
	if o.Design == nil && n > 0 {
		// An error here is the engine's to report, for the same options.
		if d, err := permutation.ForCandidates(o.K, int(n)); err == nil {
			o.Design = d
		}
	}
	return o, nil
}

// Sketched reports whether db keeps this package's sketches, alone or at
// the head of a record with band keys.
func Sketched(db *engine.DB) bool { return SketchedSize(db.SketchSize()) }

// SketchedSize reports whether the sketches of an index of sketch size n
// (engine.DB.SketchSize, a served index's Stats.SketchSize) are this
// package's: a sketch alone, or a record of a sketch.Layout.
func SketchedSize(n int) bool {
	_, banded := sketch.LayoutOfSize(n)
	return n == sketch.Size || banded
}

// ErrBelowMinSimilarity is the error for a similarity below the lowest an
// index's records were made to find candidates for (MinSimilarity): its
// pairs below it would be missed silently. Such an index is made again
// for a lower one (OptionsAt; add --min-similarity).
var ErrBelowMinSimilarity = errors.New("textindex: similarity below the index's lowest")

// MinSimilarity returns the lowest similarity db's records find
// candidates for (sketch.Layout.MinSimilarity); ok is false for an index
// whose documents carry no band keys (sketches alone, or none).
func MinSimilarity(db *engine.DB) (s float64, ok bool) { return MinSimilarityOfSize(db.SketchSize()) }

// MinSimilarityOfSize is MinSimilarity of an index of sketch size n (a
// served index's Stats.SketchSize).
func MinSimilarityOfSize(n int) (s float64, ok bool) {
	l, ok := sketch.LayoutOfSize(n)
	return l.MinSimilarity, ok
}

// CheckSimilarity refuses a threshold below the lowest an index of sketch
// size n finds candidates for, naming both and the way to lower it; 0
// asks for every candidate the index proposes, unverified, and is taken.
func CheckSimilarity(n int, threshold float64) error {
	if m, ok := MinSimilarityOfSize(n); ok && threshold != 0 && threshold < m {
		return fmt.Errorf("%w: %g asked, and the index finds pairs from %g: make it again with add --min-similarity %g (OptionsAt)", ErrBelowMinSimilarity, threshold, m, max(threshold, sketch.LowestSimilarity))
	}
	return nil
}

// Similarity estimates the Jaccard similarity of the shingle sets of two
// documents from their sketches (or records that begin with them); ok is
// false unless both hold one.
func Similarity(a, b string) (s float64, ok bool) {
	if !SketchedSize(len(a)) || !SketchedSize(len(b)) {
		return 0, false
	}
	var x, y sketch.Sketch
	copy(x[:], a)
	copy(y[:], b)
	return sketch.Similarity(x, y), true
}

// Match is a document found near a query, with its estimated similarity.
type Match struct {
	engine.Match
	Similarity float64
}

// Verify returns the matches whose estimated similarity to a document of
// sketch sk is at least threshold, most similar first (then nearest, then by
// id). Without a sketch on either side, a match is kept with similarity
// 0 when threshold is 0, else left out.
func Verify(ms []engine.Match, sk string, threshold float64) []Match {
	var out []Match
	for _, m := range ms {
		s, _ := Similarity(sk, m.Sketch)
		if s >= threshold {
			out = append(out, Match{m, s})
		}
	}
	slices.SortStableFunc(out, MoreSimilar)
	return out
}

// MoreSimilar orders verified matches as answers give them: most similar
// first, then nearest, then by id (for slices.SortFunc).
func MoreSimilar(a, b Match) int {
	return cmp.Or(cmp.Compare(b.Similarity, a.Similarity), engine.Nearer(a.Match, b.Match))
}

// InsertIfNew is the crawler's decision about text: it stores d (its
// sketch set) unless a stored document within distance k has an estimated
// similarity of at least threshold, and returns those, verified, instead
// (engine.DB.InsertIfNewFunc: atomic with other such calls).
func InsertIfNew(ctx context.Context, db *engine.DB, d engine.Doc, k int, threshold float64) ([]Match, bool, error) {
	if err := CheckSimilarity(db.SketchSize(), threshold); err != nil {
		return nil, false, err
	}
	ms, inserted, err := db.InsertIfNewFunc(ctx, d, k, func(m engine.Match) bool {
		s, _ := Similarity(d.Sketch, m.Sketch)
		return s >= threshold
	})
	if err != nil || inserted {
		return nil, inserted, err
	}
	return Verify(ms, d.Sketch, threshold), false, nil
}

// Pair is a pair of near-duplicates, with its estimated similarity.
type Pair struct {
	engine.Pair
	Similarity float64
}

// Pairs returns every pair of db's documents whose estimated similarity
// is at least threshold, with JoinOptions' defaults: PairsWith.
func Pairs(ctx context.Context, db *engine.DB, k int, threshold float64) iter.Seq2[Pair, error] {
	return PairsWith(ctx, db, k, threshold, JoinOptions{})
}

// PairsWith returns every pair of db's documents whose estimated
// similarity is at least threshold. In an index whose records carry band
// keys (OptionsAt) the candidates are the pairs that share a band key,
// found by sorts on disk (o) in time linear in the documents, whatever
// their fingerprints' distance: k is not used, and the pairs come by their
// second document's id, then their first's. In an index of sketches alone
// they are engine.DB.FindAll's pairs within distance k, in its order.
func PairsWith(ctx context.Context, db *engine.DB, k int, threshold float64, o JoinOptions) iter.Seq2[Pair, error] {
	if err := CheckSimilarity(db.SketchSize(), threshold); err != nil {
		return func(yield func(Pair, error) bool) { yield(Pair{}, err) }
	}
	if l, ok := sketch.LayoutOfSize(db.SketchSize()); ok {
		return bandPairs(ctx, db, l, threshold, o)
	}
	return func(yield func(Pair, error) bool) {
		for p, err := range db.FindAll(ctx, k) {
			if err != nil {
				yield(Pair{}, err)
				return
			}
			s, _ := Similarity(p.A.Sketch, p.B.Sketch)
			if s >= threshold && !yield(Pair{p, s}, nil) {
				return
			}
		}
	}
}

// Clusters returns the connected components of the graph of Pairs(ctx,
// db, k, threshold), each as its documents by id, the clusters by their
// smallest id; documents in no pair are left out. A cluster is connected,
// not close: a chain of near-duplicates can link two members far apart.
// Memory grows with the documents in pairs.
func Clusters(ctx context.Context, db *engine.DB, k int, threshold float64) iter.Seq2[[]engine.Doc, error] {
	return ClustersWith(ctx, db, k, threshold, JoinOptions{})
}

// ClustersWith is Clusters, its pairs joined as o says (PairsWith). In an
// index whose records carry band keys, memory holds the pairs' ids, not
// their documents, which are read again into a sort by cluster.
func ClustersWith(ctx context.Context, db *engine.DB, k int, threshold float64, o JoinOptions) iter.Seq2[[]engine.Doc, error] {
	return groupsWith(ctx, db, k, threshold, o, false)
}

// StarsWith is Stars, its pairs joined as o says (ClustersWith).
func StarsWith(ctx context.Context, db *engine.DB, k int, threshold float64, o JoinOptions) iter.Seq2[[]engine.Doc, error] {
	return groupsWith(ctx, db, k, threshold, o, true)
}

func groupsWith(ctx context.Context, db *engine.DB, k int, threshold float64, o JoinOptions, star bool) iter.Seq2[[]engine.Doc, error] {
	if l, ok := sketch.LayoutOfSize(db.SketchSize()); ok {
		if err := CheckSimilarity(db.SketchSize(), threshold); err != nil {
			return func(yield func([]engine.Doc, error) bool) { yield(nil, err) }
		}
		return bandGroups(ctx, db, l, threshold, star, o)
	}
	return Group(plain(PairsWith(ctx, db, k, threshold, o)), star)
}

// Stars is engine.DB.Stars over the graph of Pairs(ctx, db, k,
// threshold): the documents taken by id, each not yet in a star leads one
// and takes every verified near-duplicate not yet taken. Each star is its
// leader, then the other members by id; a leader left alone is left out.
func Stars(ctx context.Context, db *engine.DB, k int, threshold float64) iter.Seq2[[]engine.Doc, error] {
	return StarsWith(ctx, db, k, threshold, JoinOptions{})
}

// Group returns the clusters of the graph whose edges are pairs, as
// Clusters gives them, or with star as Stars does. Documents of one
// fingerprint have the same neighbours and are one another's, so over all
// the pairs within k its stars are engine.DB.Stars's too: an index split
// in parts (client.Sharded) groups the pairs of every part with it.
// Memory grows with the documents in pairs.
func Group(pairs iter.Seq2[engine.Pair, error], star bool) iter.Seq2[[]engine.Doc, error] {
	return func(yield func([]engine.Doc, error) bool) {
		var edges []join.Pair
		docs := map[uint64]engine.Doc{}
		for p, err := range pairs {
			if err != nil {
				yield(nil, err)
				return
			}
			docs[p.A.ID], docs[p.B.ID] = p.A, p.B
			edges = append(edges, join.Pair{A: p.A.ID, B: p.B.ID, Distance: p.Distance})
		}
		groups := join.Components(edges)
		if star {
			groups = join.Stars(edges, slices.Sorted(maps.Keys(docs)))
		}
		for _, g := range groups {
			if len(g) < 2 {
				continue // a leader whose neighbours other stars took
			}
			out := make([]engine.Doc, len(g))
			for i, id := range g {
				out[i] = docs[id]
			}
			if !yield(out, nil) {
				return
			}
		}
	}
}

// plain is pairs without their similarity.
func plain(pairs iter.Seq2[Pair, error]) iter.Seq2[engine.Pair, error] {
	return func(yield func(engine.Pair, error) bool) {
		for p, err := range pairs {
			if !yield(p.Pair, err) {
				return
			}
		}
	}
}
