package jobs

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/simhashdb/simhashdb/beam/neardup"
	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/permutation"
)

// Build writes the permuted tables of the input's distinct fingerprints as
// shards of compressed blocks (neardup.BuildTables), the design as
// Output-design (permutation.Design's binary form, to read them back), and
// reports each table's bits per fingerprint beside the information bound.
// The design is an index's for the input's size (permutation.ForIndex)
// with Distance as K, or simhash-cpp's with Blocks.
func Build(ctx context.Context, c Config) (*Report, error) {
	r, err := start(ctx, "build", &c, c.Input, c.Format, func(n int) (*permutation.Design, error) {
		if c.Blocks > 0 {
			return permutation.Blocks(c.Distance, c.Blocks)
		}
		return permutation.ForIndex(c.Distance, n)
	})
	if err != nil {
		return nil, err
	}
	n, d := r.n, r.d
	if err := writeDesign(ctx, c.Output+"-design", d); err != nil {
		return nil, err
	}
	p, s := beam.NewPipelineWithRoot()
	docs, bad := neardup.Read(s, c.Input, c.Format, c.pipeline())
	neardup.WriteLines(s, c.Bad, 1, bad)
	distinct, _, err := neardup.Distinct(s, docs, bitsFor(n, 1<<22))
	if err != nil {
		return nil, err
	}
	if _, err := neardup.BuildTables(s, distinct, d, bitsFor(n, 1<<22), c.BlockSize, c.Output); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	if _, err := r.run(ctx, p); err != nil {
		return nil, err
	}
	rep := r.done()
	for name, v := range rep.Counters {
		if t, ok := strings.CutPrefix(name, neardup.CounterTableFPs); ok {
			ti, _ := strconv.Atoi(t)
			b := rep.Counters[neardup.CounterTableBytes+t]
			rep.Tables = append(rep.Tables, TableReport{Table: ti, Fingerprints: v, Bytes: b,
				BitsPerFP: float64(8*b) / float64(v), Bound: codec.Bound(int(v))})
		}
	}
	sort.Slice(rep.Tables, func(i, j int) bool { return rep.Tables[i].Table < rep.Tables[j].Table })
	return rep, nil
}

// writeDesign writes the design through Beam's file systems.
func writeDesign(ctx context.Context, name string, d *permutation.Design) error {
	b, err := d.MarshalBinary()
	if err != nil {
		return err
	}
	return neardup.WriteFile(ctx, name, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}
