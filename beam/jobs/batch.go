package jobs

import (
	"context"
	"fmt"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/simhashdb/simhashdb/beam/neardup"
	"github.com/simhashdb/simhashdb/join"
	"github.com/simhashdb/simhashdb/permutation"
)

// Batch answers the queries of c.Input against the documents of c.Stored,
// as simhashdb batch answers them from an index of those documents (in
// another order). More queries than c.QueryChunk run as several pipelines,
// chunk i written to Output-0000i-of-0000n.
func Batch(ctx context.Context, c Config) (*Report, error) {
	if c.Stored == "" {
		return nil, fmt.Errorf("%w: --stored is required", ErrUsage)
	}
	// The queries' tables: a design for their number (a chunk's), as the
	// paper's batch mode builds them.
	r, err := start(ctx, "batch", &c, c.Input, neardup.FormatFingerprints, func(n int) (*permutation.Design, error) {
		return join.DesignFor(c.Distance, min(n, max(c.QueryChunk, 1)))
	})
	if err != nil {
		return nil, err
	}
	nq, d := r.n, r.d
	chunks := (nq + c.QueryChunk - 1) / c.QueryChunk
	for ch := range chunks {
		p, s := beam.NewPipelineWithRoot()
		queries, badQ := neardup.ReadQueries(s, c.Input)
		stored, badS := neardup.Read(s, c.Stored, c.Format, c.pipeline())
		out := c.Output
		if chunks > 1 {
			queries = neardup.ChunkQueries(s, queries, ch, chunks)
			out = neardup.ShardFile(c.Output, ch, chunks)
		}
		if ch == 0 {
			neardup.WriteLines(s, c.Bad, 1, beam.Flatten(s, badQ, badS))
		}
		answers, err := neardup.Batch(s, queries, stored, d, c.Distance)
		if err != nil {
			return nil, err
		}
		neardup.WriteLines(s, out, 1, answers)
		if _, err := r.run(ctx, p); err != nil {
			return nil, err
		}
	}
	return r.done(), nil
}
