package client

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"golang.org/x/sync/errgroup"

	"github.com/simhashdb/simhashdb/engine"
)

// Sharded is a client of an index split over shards by document id: each
// shard a server, or the nodes of a replicated index, holding the
// documents whose ids ShardOf places there. Writes and gets go to their
// id's shard; every query, batch, all-pairs and clusters call asks every
// shard and merges, so its answer is the one index's (exact, as
// docs/distributed.md's design says). Shards are written apart: a batch
// that spans shards is a commit in each, not one. Insert-if-new and
// stars, which need one state of every shard at once, are refused
// (ErrSharded).
type Sharded struct {
	shards []*Client
	o      Options
}

// ErrSharded: an operation a sharded index does not give.
var ErrSharded = errors.New("client: not on a sharded index")

// NewSharded returns a client of the shards, each given as New takes a
// server (one address, or a replicated index's nodes comma separated),
// in the order that places documents (ShardOf): the same order always.
func NewSharded(shards []string, o Options) (*Sharded, error) {
	if len(shards) == 0 {
		return nil, errors.New("client: no shards")
	}
	s := &Sharded{}
	for i, addr := range shards {
		c, err := New(addr, o)
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", i, err)
		}
		s.shards = append(s.shards, c)
	}
	s.o = s.shards[0].o
	return s, nil
}

// ShardOf is the shard, of n, that holds the document id: its id mixed
// (SplitMix64's finalizer), modulo n.
func ShardOf(id uint64, n int) int {
	z := id + 0x9e3779b97f4a7c15
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return int((z ^ z>>31) % uint64(n))
}

func (s *Sharded) of(id uint64) *Client { return s.shards[ShardOf(id, len(s.shards))] }

// Insert stores d in its shard.
func (s *Sharded) Insert(ctx context.Context, d engine.Doc) error { return s.of(d.ID).Insert(ctx, d) }

// InsertBatch stores docs, a commit in each shard they go to.
func (s *Sharded) InsertBatch(ctx context.Context, docs []engine.Doc) error {
	parts := make([][]engine.Doc, len(s.shards))
	for _, d := range docs {
		i := ShardOf(d.ID, len(s.shards))
		parts[i] = append(parts[i], d)
	}
	return s.each(ctx, func(ctx context.Context, i int, c *Client) error {
		if len(parts[i]) == 0 {
			return nil
		}
		return c.InsertBatch(ctx, parts[i])
	})
}

// Get returns the document id from its shard.
func (s *Sharded) Get(ctx context.Context, id uint64) (engine.Doc, error) {
	return s.of(id).Get(ctx, id)
}

// Delete removes the documents ids from their shards.
func (s *Sharded) Delete(ctx context.Context, ids ...uint64) error {
	parts := make([][]uint64, len(s.shards))
	for _, id := range ids {
		i := ShardOf(id, len(s.shards))
		parts[i] = append(parts[i], id)
	}
	return s.each(ctx, func(ctx context.Context, i int, c *Client) error {
		if len(parts[i]) == 0 {
			return nil
		}
		return c.Delete(ctx, parts[i]...)
	})
}

// each runs f on every shard at once.
func (s *Sharded) each(ctx context.Context, f func(ctx context.Context, i int, c *Client) error) error {
	g, ctx := errgroup.WithContext(ctx)
	for i, c := range s.shards {
		g.Go(func() error {
			if err := f(ctx, i, c); err != nil {
				return fmt.Errorf("shard %d: %w", i, err)
			}
			return nil
		})
	}
	return g.Wait()
}

// byDistance orders matches as the engine does: nearest first, then by id.
func byDistance(a, b engine.Match) int {
	return cmp.Or(cmp.Compare(a.Distance, b.Distance), cmp.Compare(a.ID, b.ID))
}

// Query returns the documents within k of fp in every shard, nearest
// first.
func (s *Sharded) Query(ctx context.Context, fp uint64, k int) ([]engine.Match, error) {
	res := make([][]engine.Match, len(s.shards))
	err := s.each(ctx, func(ctx context.Context, i int, c *Client) (err error) {
		res[i], err = c.Query(ctx, fp, k)
		return err
	})
	if err != nil {
		return nil, err
	}
	out := slices.Concat(res...)
	slices.SortFunc(out, byDistance)
	return out, nil
}

// QueryBatch answers the queries from every shard, in order, a run of
// Options.BatchLines queries at a time.
func (s *Sharded) QueryBatch(ctx context.Context, queries []uint64, k int) iter.Seq2[engine.BatchResult, error] {
	return func(yield func(engine.BatchResult, error) bool) {
		for from := 0; from < len(queries); from += s.o.BatchLines {
			chunk := queries[from:min(from+s.o.BatchLines, len(queries))]
			res, err := s.batch(ctx, chunk, k)
			if err != nil {
				yield(engine.BatchResult{}, err)
				return
			}
			for i, ms := range res {
				slices.SortFunc(ms, byDistance)
				if !yield(engine.BatchResult{Index: from + i, Query: chunk[i], Matches: ms}, nil) {
					return
				}
			}
		}
	}
}

// batch is every shard's matches of each query, gathered by query.
func (s *Sharded) batch(ctx context.Context, queries []uint64, k int) ([][]engine.Match, error) {
	per := make([][][]engine.Match, len(s.shards))
	err := s.each(ctx, func(ctx context.Context, i int, c *Client) error {
		per[i] = make([][]engine.Match, len(queries))
		for r, err := range c.QueryBatch(ctx, queries, k) {
			if err != nil {
				return err
			}
			per[i][r.Index] = r.Matches
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	out := make([][]engine.Match, len(queries))
	for q := range queries {
		for i := range s.shards {
			out[q] = append(out[q], per[i][q]...)
		}
	}
	return out, nil
}

// Docs streams every document of every shard, by id.
func (s *Sharded) Docs(ctx context.Context) iter.Seq2[engine.Doc, error] {
	return func(yield func(engine.Doc, error) bool) {
		type head struct {
			d    engine.Doc
			next func() (engine.Doc, error, bool)
		}
		var heads []head
		for i, c := range s.shards {
			next, stop := iter.Pull2(c.Docs(ctx))
			defer stop()
			d, err, ok := next()
			if err != nil {
				yield(engine.Doc{}, fmt.Errorf("shard %d: %w", i, err))
				return
			}
			if ok {
				heads = append(heads, head{d, next})
			}
		}
		for len(heads) > 0 {
			m := 0
			for j := range heads {
				if heads[j].d.ID < heads[m].d.ID {
					m = j
				}
			}
			if !yield(heads[m].d, nil) {
				return
			}
			d, err, ok := heads[m].next()
			switch {
			case err != nil:
				yield(engine.Doc{}, err)
				return
			case ok:
				heads[m].d = d
			default:
				heads = slices.Delete(heads, m, m+1)
			}
		}
	}
}

// FindAll streams every pair of documents within k, each once with
// A.ID < B.ID: each shard's own pairs, then those across two shards, found
// by querying each document of one shard against the other's tables.
func (s *Sharded) FindAll(ctx context.Context, k int) iter.Seq2[engine.Pair, error] {
	return func(yield func(engine.Pair, error) bool) {
		for i, c := range s.shards {
			for p, err := range c.FindAll(ctx, k) {
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
				if !s.across(ctx, a, s.shards[j], k, yield) {
					return
				}
			}
		}
	}
}

// across yields the pairs within k of a document of a and one of b; false
// when the caller stopped or an error was yielded.
func (s *Sharded) across(ctx context.Context, a, b *Client, k int, yield func(engine.Pair, error) bool) bool {
	var docs []engine.Doc
	flush := func() bool {
		fps := make([]uint64, len(docs))
		for i, d := range docs {
			fps[i] = d.Fingerprint
		}
		for r, err := range b.QueryBatch(ctx, fps, k) {
			if err != nil {
				yield(engine.Pair{}, err)
				return false
			}
			for _, m := range r.Matches {
				p := engine.Pair{A: docs[r.Index], B: m.Doc, Distance: m.Distance}
				if p.A.ID > p.B.ID {
					p.A, p.B = p.B, p.A
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
			yield(engine.Pair{}, err)
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
// Clusters does. Its memory grows with the documents in clusters, and its
// time with the pairs (the engine's works over distinct fingerprints).
func (s *Sharded) Clusters(ctx context.Context, k int) iter.Seq2[[]engine.Doc, error] {
	return func(yield func([]engine.Doc, error) bool) {
		parent := map[uint64]uint64{}
		docs := map[uint64]engine.Doc{}
		find := func(x uint64) uint64 {
			for parent[x] != x {
				parent[x] = parent[parent[x]]
				x = parent[x]
			}
			return x
		}
		for p, err := range s.FindAll(ctx, k) {
			if err != nil {
				yield(nil, err)
				return
			}
			for _, d := range []engine.Doc{p.A, p.B} {
				if _, ok := parent[d.ID]; !ok {
					parent[d.ID], docs[d.ID] = d.ID, d
				}
			}
			ra, rb := find(p.A.ID), find(p.B.ID)
			if ra != rb {
				parent[max(ra, rb)] = min(ra, rb)
			}
		}
		groups := map[uint64][]engine.Doc{}
		for id, d := range docs {
			r := find(id)
			groups[r] = append(groups[r], d)
		}
		roots := make([]uint64, 0, len(groups))
		for _, g := range groups {
			slices.SortFunc(g, func(a, b engine.Doc) int { return cmp.Compare(a.ID, b.ID) })
			roots = append(roots, g[0].ID)
		}
		slices.Sort(roots)
		for _, r := range roots {
			if !yield(groups[find(r)], nil) {
				return
			}
		}
	}
}

// InsertIfNew is refused: the decision needs every shard's documents at
// one point of one order (the votes of docs/distributed.md, not built).
func (s *Sharded) InsertIfNew(context.Context, engine.Doc, int) ([]engine.Match, bool, error) {
	return nil, false, fmt.Errorf("%w: insert-if-new needs one order over every shard", ErrSharded)
}
