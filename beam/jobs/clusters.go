package jobs

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/simhashdb/simhashdb/beam/neardup"
	"github.com/simhashdb/simhashdb/permutation"
)

// FindClusters writes the connected components of the within-distance
// graph of the input's fingerprints, as simhashdb find-clusters writes them
// (in another order): one pipeline finds the pairs, then rounds of
// large-star and small-star run, one pipeline each, until a round changes
// no edge, and a last pipeline writes the clusters. The rounds' edges go
// to c.Temp, removed at the end when it is local.
func FindClusters(ctx context.Context, c Config) (*Report, error) {
	r, err := start(ctx, "find-clusters", &c, c.Input, c.Format, func(n int) (*permutation.Design, error) { return pairDesign(&c, n) })
	if err != nil {
		return nil, err
	}
	n, d := r.n, r.d
	shards := max(shardsFor(n), c.Shards) // the rounds' files, as many as the output's at least
	edgesOf := func(round int) string { return fmt.Sprintf("%s/edges-%03d", c.Temp, round) }
	glob := func(path string) string {
		if shards == 1 {
			return path
		}
		return path + "-*"
	}
	dupsPath := c.Temp + "/duplicates"

	p, s := beam.NewPipelineWithRoot()
	pairs, dups, err := pairsPipeline(s, &c, d, n)
	if err != nil {
		return nil, err
	}
	neardup.WriteLines(s, edgesOf(0), shards, neardup.NumberPairLines(s, pairs))
	neardup.WriteLines(s, dupsPath, 1, neardup.CountLines(s, dups))
	if _, err := r.run(ctx, p); err != nil {
		return nil, err
	}
	round := 0
	for {
		if round == c.MaxRounds {
			return nil, fmt.Errorf("find-clusters: no convergence after %d rounds (edges in %s)", round, c.Temp)
		}
		p, s := beam.NewPipelineWithRoot()
		edges := neardup.StarRound(s, neardup.ReadNumberPairs(s, glob(edgesOf(round))))
		round++
		neardup.WriteLines(s, edgesOf(round), shards, neardup.NumberPairLines(s, edges))
		cs, err := r.run(ctx, p)
		if err != nil {
			return nil, err
		}
		if cs[neardup.CounterStarChanges] == 0 {
			break
		}
	}
	r.rep.Counters["rounds"] = int64(round)
	p, s = beam.NewPipelineWithRoot()
	lines := neardup.StarClusters(s, neardup.ReadNumberPairs(s, glob(edgesOf(round))), neardup.ReadCounts(s, dupsPath))
	neardup.WriteLines(s, c.Output, c.Shards, lines)
	if _, err := r.run(ctx, p); err != nil {
		return nil, err
	}
	if !strings.Contains(c.Temp, "://") {
		// Local rounds are removed; on a remote file system they stay for
		// the bucket's lifecycle rules to take.
		if err := os.RemoveAll(c.Temp); err != nil {
			return nil, err
		}
	}
	return r.done(), nil
}
