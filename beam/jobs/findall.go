package jobs

import (
	"context"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/simhashdb/simhashdb/beam/neardup"
	"github.com/simhashdb/simhashdb/join"
	"github.com/simhashdb/simhashdb/permutation"
)

// pairDesign returns the design find-all and find-clusters use: simhash-cpp's
// with Blocks, else join.DesignFor the estimated size, as simhashdb
// find-all chooses.
func pairDesign(c *Config, n int) (*permutation.Design, error) {
	if c.Blocks > 0 {
		return permutation.Blocks(c.Distance, c.Blocks)
	}
	return join.DesignFor(c.Distance, n)
}

// pairsPipeline reads the input and returns its distinct fingerprints'
// pairs and its duplicates.
func pairsPipeline(s beam.Scope, c *Config, d *permutation.Design, n int) (pairs, dups beam.PCollection, err error) {
	docs, bad := neardup.Read(s, c.Input, c.Format, c.pipeline())
	neardup.WriteLines(s, c.Bad, 1, bad)
	distinct, dups, err := neardup.Distinct(s, docs, bitsFor(n, 1<<22))
	if err != nil {
		return pairs, dups, err
	}
	pairs, err = neardup.FindAll(s, distinct, d, c.Distance, bitsFor(n, 1<<20))
	return pairs, dups, err
}

// FindAll writes every pair within c.Distance among the input's
// fingerprints, as simhashdb find-all writes them (in another order), and
// the groups of exact duplicates to Output.duplicates.
func FindAll(ctx context.Context, c Config) (*Report, error) {
	r, err := start(ctx, "find-all", &c, c.Input, c.Format, func(n int) (*permutation.Design, error) { return pairDesign(&c, n) })
	if err != nil {
		return nil, err
	}
	n, d := r.n, r.d
	p, s := beam.NewPipelineWithRoot()
	pairs, dups, err := pairsPipeline(s, &c, d, n)
	if err != nil {
		return nil, err
	}
	neardup.WriteLines(s, c.Output, c.Shards, neardup.PairLines(s, pairs, dups))
	neardup.WriteLines(s, c.Output+".duplicates", 1, neardup.DuplicateLines(s, dups))
	if _, err := r.run(ctx, p); err != nil {
		return nil, err
	}
	return r.done(), nil
}
