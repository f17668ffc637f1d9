package server

import (
	"context"
	"iter"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/textindex"
)

// The answers both APIs give (the /v1 JSON endpoints and the RPC), one
// piece of code each; the callers convert them to their wire shapes.

// answer is a query's matches: verified (with their similarity) when the
// query carried a sketch, plain otherwise.
type answer struct {
	plain    []engine.Match
	verified []textindex.Match
	sketched bool // verified holds the answer
}

// ask answers a query of fp within *kp (the index's K if nil); with a
// sketch sk (of text in an index that keeps sketches), verified at the
// similarity *sp (the default if nil), which a query without sk refuses;
// after every write acknowledged before it when latest.
func (s *Server) ask(ctx context.Context, fp uint64, sk string, kp *int, sp *float64, latest bool) (answer, error) {
	k, err := s.distance(kp)
	if err != nil {
		return answer{}, err
	}
	sim, err := s.similarity(sp)
	if err != nil {
		return answer{}, err
	}
	if sp != nil && sk == "" {
		return answer{}, bad(`"similarity" compares texts: send "text"`)
	}
	if err := s.latest(ctx, latest); err != nil {
		return answer{}, err
	}
	ms, err := s.db.Query(ctx, fp, k)
	if err != nil || sk == "" {
		return answer{plain: ms}, err
	}
	return answer{verified: textindex.Verify(ms, sk, sim), sketched: true}, nil
}

// latest returns, when on, once the index holds every write acknowledged
// before it (Writes.Latest); a replicated index that cannot tell is busy.
func (s *Server) latest(ctx context.Context, on bool) error {
	if !on {
		return nil
	}
	if err := s.writes.Latest(ctx); err != nil {
		return busy{err}
	}
	return nil
}

// insertIfNew stores d unless a document lies within k of it (verified by
// the sketches when d has one), and returns those that do. A client that
// places documents over shards (shards above 1) is refused unless this
// server is a node of one of as many shards sharing a log, where the
// decision covers every shard: elsewhere it would cover this server's
// documents alone.
func (s *Server) insertIfNew(ctx context.Context, d engine.Doc, k int, sim float64, shards int) (answer, bool, error) {
	if shard, n := s.sharding(); shards > 1 && shards != n {
		if n <= 1 {
			return answer{}, false, bad("%w: the client places documents over %d shards, and this server holds one index: insert-if-new would decide over this server's documents alone (serve each shard's nodes with --nats and --shard I/%d)", api.ErrNotSharded, shards, shards)
		}
		return answer{}, false, bad("%w: the client places documents over %d shards, and this server is shard %d of %d", api.ErrNotSharded, shards, shard, n)
	}
	if d.Sketch != "" {
		dups, inserted, err := s.writes.InsertIfNewSimilar(ctx, d, k, sim)
		return answer{verified: dups, sketched: true}, inserted, err
	}
	dups, inserted, err := s.writes.InsertIfNew(ctx, d, k)
	return answer{plain: dups}, inserted, err
}

// sharding is the shard this server's writes are of and the count of
// shards that share its log (0, 0: one index).
func (s *Server) sharding() (shard, shards int) {
	if x, ok := s.writes.(interface{ Sharding() (int, int) }); ok {
		return x.Sharding()
	}
	return 0, 0
}

// clusterSeq is the index's clusters within k, by connected components or
// as stars, verified at sim in an index with sketches.
func (s *Server) clusterSeq(ctx context.Context, k int, sim float64, verified, star bool) iter.Seq2[[]engine.Doc, error] {
	switch {
	case verified && star:
		return textindex.Stars(ctx, s.db, k, sim)
	case verified:
		return textindex.Clusters(ctx, s.db, k, sim)
	case star:
		return s.db.Stars(ctx, k)
	}
	return s.db.Clusters(ctx, k)
}
