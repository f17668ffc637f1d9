package neardup

import (
	"context"
	"strconv"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/simhashdb/simhashdb/internal/lines"
	"github.com/simhashdb/simhashdb/join"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/simhash"
)

func init() {
	register.DoFn4x1[context.Context, uint64, func(*[]byte) bool, func(uint64, uint64), error](&scanGroupFn{})
	beam.RegisterFunction(pairLine)
	beam.RegisterFunction(dupLine)
	beam.RegisterFunction(duplicateGroupLine)
	register.Emitter2[uint64, uint64]()
}

// FindAll returns every pair of distinct fingerprints (packed batches, as
// Distinct returns them) within distance k, as KV<uint64, uint64> with the
// smaller first, each pair once: design d's tables are keyed by their
// prefix (see groupBits), each group's runs compared as the single-machine
// join compares them, and a pair is emitted only by the first table that
// brings it together (join.Finder), so no second shuffle removes
// duplicates. Pairs of equal fingerprints are Distinct's dups.
func FindAll(s beam.Scope, distinct beam.PCollection, d *permutation.Design, k, groupBits int) (beam.PCollection, error) {
	s = s.Scope("neardup.FindAll")
	if _, err := join.New(d, k); err != nil {
		return beam.PCollection{}, err
	}
	groups, err := byTable(s, distinct, d, groupBits)
	if err != nil {
		return beam.PCollection{}, err
	}
	b, _ := d.MarshalBinary()
	return beam.ParDo(s, &scanGroupFn{Design: b, K: k}, groups), nil
}

type scanGroupFn struct {
	Design []byte `json:"design"`
	K      int    `json:"k"`
	f      *join.Finder
}

func (f *scanGroupFn) Setup() error {
	d := new(permutation.Design)
	if err := d.UnmarshalBinary(f.Design); err != nil {
		return err
	}
	var err error
	f.f, err = join.New(d, f.K)
	return err
}

func (f *scanGroupFn) ProcessElement(ctx context.Context, key uint64, batches func(*[]byte) bool, emit func(uint64, uint64)) error {
	vals, err := groupValues(batches)
	if err != nil {
		return err
	}
	var n int64
	sc := f.f.NewScan(groupTable(key), func(p join.Pair) bool {
		n++
		emit(p.A, p.B)
		return true
	})
	sc.Feed(vals)
	sc.Close()
	pairsFound.Inc(ctx, n)
	return nil
}

// PairLines formats find-all's output as simhashdb find-all writes it: a
// line "[a, b]" for each pair, and "[v, v]" for each fingerprint that
// occurs more than once (dups, KV<uint64, int64>).
func PairLines(s beam.Scope, pairs, dups beam.PCollection) beam.PCollection {
	s = s.Scope("neardup.PairLines")
	return beam.Flatten(s, beam.ParDo(s, pairLine, pairs), beam.ParDo(s, dupLine, dups))
}

func pairLine(a, b uint64, emit func(string)) {
	line := lines.AppendArray(nil, a, b)
	emit(string(line[:len(line)-1]))
}

// dupLine writes "[v, v]" and counts it among the pairs, as the lines
// written are.
func dupLine(ctx context.Context, v uint64, _ int64, emit func(string)) {
	pairsFound.Inc(ctx, 1)
	pairLine(v, v, emit)
}

// DuplicateLines formats the exact duplicates (Distinct's dups) as groups:
// {"fp":"0x...","count":N} a line, each fingerprint that occurs more than
// once and how often.
func DuplicateLines(s beam.Scope, dups beam.PCollection) beam.PCollection {
	return beam.ParDo(s.Scope("neardup.DuplicateLines"), duplicateGroupLine, dups)
}

func duplicateGroupLine(v uint64, n int64, emit func(string)) {
	emit(`{"fp":"` + simhash.Format(v) + `","count":` + strconv.FormatInt(n, 10) + "}")
}
