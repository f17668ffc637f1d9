package client

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	simhashdbv1 "github.com/simhashdb/simhashdb/gen/simhashdb/v1"
	"github.com/simhashdb/simhashdb/textindex"
	"github.com/simhashdb/simhashdb/textindex/naming"
)

// Sharded is a client of an index split over shards by document id: each
// shard a server, or the nodes of a replicated index, holding the
// documents whose ids api.ShardOf places there. Writes and gets go to their
// id's shard; every query, batch, all-pairs and clusters call asks every
// shard and merges, so its answer is the one index's (exact, as
// docs/distributed.md's design says). Shards are written apart: a batch
// that spans shards is a commit in each, not one. Insert-if-new needs
// one order over every shard: the shards' nodes share one log (serve
// --shard), or it is refused (ErrSharded).
// Settings (SetMeta) go to every shard; Stats and Check add theirs up.
type Sharded struct {
	shards []*Client
	o      Options
}

var _ interface {
	api.Index
	api.Verifier
	naming.Index
} = (*Sharded)(nil)

// ErrSharded: an operation a sharded index does not give.
var ErrSharded = api.ErrSharded

// NewSharded returns a client of the shards, each given as New takes a
// server (one address, or a replicated index's nodes comma separated),
// in the order that places documents (api.ShardOf): the same order always.
func NewSharded(shards []string, o Options) (*Sharded, error) {
	if len(shards) == 0 {
		return nil, errors.New("client: no shards")
	}
	s := &Sharded{}
	owner := map[string]int{} // a node's address: its shard
	for i, addr := range shards {
		c, err := New(addr, o)
		if err != nil {
			return nil, fmt.Errorf("shard %d: %w", i, err)
		}
		nodes, _ := parseNodes(addr) // New parsed them
		for _, u := range nodes {
			key := strings.ToLower(u.Host) + strings.TrimRight(u.Path, "/")
			if j, ok := owner[key]; ok {
				return nil, fmt.Errorf("client: %s is in shard %d and shard %d: each shard is other servers (every document and pair would count twice)", u.Host, j, i)
			}
			owner[key] = i
		}
		s.shards = append(s.shards, c)
	}
	s.o = s.shards[0].o
	return s, nil
}

func (s *Sharded) of(id uint64) *Client { return s.shards[api.ShardOf(id, len(s.shards))] }

// Insert stores d in its shard.
func (s *Sharded) Insert(ctx context.Context, d engine.Doc) error { return s.of(d.ID).Insert(ctx, d) }

// InsertBatch stores docs, a commit in each shard they go to.
func (s *Sharded) InsertBatch(ctx context.Context, docs []engine.Doc) error {
	parts := make([][]engine.Doc, len(s.shards))
	for _, d := range docs {
		i := api.ShardOf(d.ID, len(s.shards))
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
		i := api.ShardOf(id, len(s.shards))
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
	slices.SortFunc(out, engine.Nearer)
	return out, nil
}

// QueryFingerprints appends to dst the distinct fingerprints within k of
// fp in every shard, nearest first, then ascending, and returns it.
func (s *Sharded) QueryFingerprints(ctx context.Context, dst []engine.Near, fp uint64, k int) ([]engine.Near, error) {
	kk, err := distance(k)
	if err != nil {
		return dst, err
	}
	a, err := s.queryFingerprints(ctx, &simhashdbv1.QueryFingerprintsRequest{Fingerprint: fp, K: &kk, Latest: s.o.Latest})
	if err != nil {
		return dst, err
	}
	return append(dst, api.NearsFromProto(a.GetNears())...), nil
}

// queryFingerprints asks every shard req and merges their answers: a
// fingerprint stored in several shards (by documents of different ids)
// once.
func (s *Sharded) queryFingerprints(ctx context.Context, req *simhashdbv1.QueryFingerprintsRequest) (*simhashdbv1.QueryFingerprintsResponse, error) {
	res := make([][]engine.Near, len(s.shards))
	err := s.each(ctx, func(ctx context.Context, i int, c *Client) error {
		a, err := unary(ctx, c, true, "QueryFingerprints", c.rpc.QueryFingerprints, req)
		res[i] = api.NearsFromProto(a.GetNears())
		return err
	})
	if err != nil {
		return nil, err
	}
	ns := slices.Concat(res...)
	slices.SortFunc(ns, engine.CompareNear)
	return &simhashdbv1.QueryFingerprintsResponse{Nears: api.NearsProto(slices.Compact(ns))}, nil
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
				slices.SortFunc(ms, engine.Nearer)
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

// InsertIfNew is the crawler's decision over every shard: d's shard
// decides it at its place in the log that the shards share (each shard's
// nodes vote with their own near-duplicates; serve --shard), so that no
// two crawlers insert near-duplicates of each other whichever shards
// their documents go to. Shards that do not share a log are refused
// (ErrSharded): the decision would be one shard's.
func (s *Sharded) InsertIfNew(ctx context.Context, d engine.Doc, k int) ([]engine.Match, bool, error) {
	a, err := s.insertIfNew(ctx, d, k, nil)
	if err != nil {
		return nil, false, err
	}
	return api.MatchesFromProto(a.GetDuplicates()), a.GetInserted(), nil
}

// InsertIfNewSimilar is InsertIfNew verified by the sketches, as
// Client.InsertIfNewSimilar.
func (s *Sharded) InsertIfNewSimilar(ctx context.Context, d engine.Doc, k int, similarity float64) ([]textindex.Match, bool, error) {
	a, err := s.insertIfNew(ctx, d, k, &similarity)
	if err != nil {
		return nil, false, err
	}
	return api.VerifiedFromProto(a.GetDuplicates()), a.GetInserted(), nil
}

func (s *Sharded) insertIfNew(ctx context.Context, d engine.Doc, k int, similarity *float64) (*simhashdbv1.InsertIfNewResponse, error) {
	req, err := ifNewRequest(d, k, similarity)
	if err != nil {
		return nil, err
	}
	return s.decide(ctx, req)
}

// decide sends the insert-if-new req to its document's shard, asking
// for the decision over every shard, and checks that it was.
func (s *Sharded) decide(ctx context.Context, req *simhashdbv1.InsertIfNewRequest) (*simhashdbv1.InsertIfNewResponse, error) {
	n := len(s.shards)
	if n == 1 {
		return s.shards[0].decide(ctx, req)
	}
	shard := api.ShardOf(req.GetId(), n)
	req.Shards = uint32(n)
	a, err := s.shards[shard].decide(ctx, req)
	switch {
	case errors.Is(err, api.ErrNotSharded):
		return nil, fmt.Errorf("%w: shard %d: %w", ErrSharded, shard, err)
	case err != nil:
		return nil, fmt.Errorf("shard %d: %w", shard, err)
	case int(a.GetShards()) != n:
		// A server that does not know of shards took the request as one
		// index's: what it decided covers its own documents alone.
		return nil, fmt.Errorf("%w: shard %d decided insert-if-new of document %d over its own documents (inserted: %v), not over the %d shards: serve each shard's nodes with --nats and --shard I/%d", ErrSharded, shard, req.GetId(), a.GetInserted(), n, n)
	}
	return a, nil
}

// QueryText is Client.QueryText over every shard: each reads the text
// with the index's options and answers from its documents; the matches
// merged, most similar first in an index of text, else nearest first.
func (s *Sharded) QueryText(ctx context.Context, text string, k int, similarity *float64) (uint64, []textindex.Match, error) {
	req, err := textQuery(text, k, similarity, s.o.Latest)
	if err != nil {
		return 0, nil, err
	}
	a, err := s.query(ctx, req)
	if err != nil {
		return 0, nil, err
	}
	return a.GetFingerprint(), api.VerifiedFromProto(a.GetMatches()), nil
}

// query asks every shard req and merges their answers (merged).
func (s *Sharded) query(ctx context.Context, req *simhashdbv1.QueryRequest) (*simhashdbv1.QueryResponse, error) {
	res := make([]*simhashdbv1.QueryResponse, len(s.shards))
	err := s.each(ctx, func(ctx context.Context, i int, c *Client) (err error) {
		res[i], err = unary(ctx, c, true, "Query", c.rpc.Query, req)
		return err
	})
	if err != nil {
		return nil, err
	}
	var ms [][]*simhashdbv1.Match
	for i, r := range res {
		if r.GetFingerprint() != res[0].GetFingerprint() {
			return nil, fmt.Errorf("shard %d reads the query as %#016x, shard 0 as %#016x: the shards of one index share its settings", i, r.GetFingerprint(), res[0].GetFingerprint())
		}
		ms = append(ms, r.GetMatches())
	}
	return &simhashdbv1.QueryResponse{Fingerprint: res[0].GetFingerprint(), Matches: merged(ms...)}, nil
}

// merged is the shards' matches of one query in one answer's order: most
// similar first where the sketches verified them, else nearest first.
func merged(shards ...[]*simhashdbv1.Match) []*simhashdbv1.Match {
	all := slices.Concat(shards...)
	if len(all) > 0 && all[0].Similarity != nil {
		ms := api.VerifiedFromProto(all)
		slices.SortFunc(ms, textindex.MoreSimilar)
		return api.VerifiedProto(ms)
	}
	ms := api.MatchesFromProto(all)
	slices.SortFunc(ms, engine.Nearer)
	return api.MatchesProto(ms)
}
