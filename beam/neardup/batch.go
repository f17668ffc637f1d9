package neardup

import (
	"cmp"
	"context"
	"encoding/json"
	"math/bits"
	"reflect"
	"slices"
	"sort"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/cespare/xxhash/v2"
	"github.com/simhashdb/simhashdb/internal/lines"
	"github.com/simhashdb/simhashdb/join"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/simhash"
)

func init() {
	register.DoFn4x1[context.Context, Doc, func(*Query) bool, func(string, lines.Match), error](&matchFn{})
	beam.RegisterFunction(keyQuery)
	beam.RegisterType(reflect.TypeOf((*chunkFn)(nil)).Elem())
	beam.RegisterFunction(answerLine)
	register.Emitter2[string, lines.Match]()
	register.Emitter2[string, Query]()
	register.Iter1[Query]()
	register.Iter1[lines.Match]()
	beam.RegisterType(reflect.TypeOf((*lines.Match)(nil)).Elem())
}

// Batch answers queries (from ReadQueries) against stored documents (from
// Read), the paper's batch mode: the queries are a side input, of which
// each worker builds design d's permuted tables once, and the stored side
// streams past them, each document looked up in every table by its prefix.
// A match is found by the first table that brings it together, so none is
// found twice. The result is one JSON line a query, as simhashdb batch
// writes it: {"query","qid","matches"}, the matches nearest first, then by
// id. The queries must fit a worker's memory (about 40 bytes each and table):
// split larger sets (ChunkQueries) and run one Batch a chunk.
func Batch(s beam.Scope, queries, stored beam.PCollection, d *permutation.Design, k int) (beam.PCollection, error) {
	s = s.Scope("neardup.Batch")
	if _, err := join.New(d, k); err != nil {
		return beam.PCollection{}, err
	}
	b, _ := d.MarshalBinary()
	matches := beam.ParDo(s, &matchFn{Design: b, K: k}, stored, beam.SideInput{Input: queries})
	keyed := beam.ParDo(s, keyQuery, queries)
	return beam.ParDo(s, answerLine, beam.CoGroupByKey(s, keyed, matches)), nil
}

func keyQuery(q Query, emit func(string, Query)) { emit(q.Key, q) }

// answerLine writes a query's answer.
func answerLine(_ string, qs func(*Query) bool, ms func(*lines.Match) bool, emit func(string)) error {
	var q Query
	if !qs(&q) {
		return nil // matches of no query: cannot happen
	}
	a := lines.Answer{Query: simhash.Format(q.FP), QID: json.RawMessage(q.QID), Matches: []lines.Match{}}
	var m lines.Match
	for ms(&m) {
		a.Matches = append(a.Matches, m)
	}
	slices.SortFunc(a.Matches, func(x, y lines.Match) int {
		return cmp.Or(cmp.Compare(x.Distance, y.Distance), cmp.Compare(x.ID, y.ID))
	})
	b, err := json.Marshal(a)
	if err != nil {
		return err
	}
	emit(string(b))
	return nil
}

// queryTable is one table of the queries: their permuted values, sorted,
// and which query each is.
type queryTable struct {
	pv []uint64
	qi []int32
}

func (q queryTable) Len() int           { return len(q.pv) }
func (q queryTable) Less(i, j int) bool { return q.pv[i] < q.pv[j] }
func (q queryTable) Swap(i, j int) {
	q.pv[i], q.pv[j] = q.pv[j], q.pv[i]
	q.qi[i], q.qi[j] = q.qi[j], q.qi[i]
}

type matchFn struct {
	Design  []byte `json:"design"`
	K       int    `json:"k"`
	d       *permutation.Design
	f       *join.Finder
	queries []Query
	tables  []queryTable
}

func (f *matchFn) Setup() error {
	f.d = new(permutation.Design)
	if err := f.d.UnmarshalBinary(f.Design); err != nil {
		return err
	}
	var err error
	f.f, err = join.New(f.d, f.K)
	return err
}

// build builds the query tables on the first document: the side input is
// the same for the whole job (one global window).
func (f *matchFn) build(queries func(*Query) bool) {
	var q Query
	for queries(&q) {
		f.queries = append(f.queries, q)
	}
	f.tables = make([]queryTable, len(f.d.Tables))
	for t := range f.d.Tables {
		tb := &f.d.Tables[t]
		qt := queryTable{pv: make([]uint64, len(f.queries)), qi: make([]int32, len(f.queries))}
		for i := range f.queries {
			qt.pv[i], qt.qi[i] = tb.Permute(f.queries[i].FP), int32(i)
		}
		sort.Sort(qt) // permuted once each, not in every comparison
		f.tables[t] = qt
	}
}

func (f *matchFn) ProcessElement(ctx context.Context, doc Doc, queries func(*Query) bool, emit func(string, lines.Match)) error {
	if f.tables == nil {
		f.build(queries)
	}
	var n int64
	for t := range f.d.Tables {
		tb, qt := &f.d.Tables[t], &f.tables[t]
		lo, hi := tb.Range(tb.Permute(doc.FP))
		i, _ := slices.BinarySearch(qt.pv, lo)
		for ; i < len(qt.pv) && qt.pv[i] <= hi; i++ {
			q := &f.queries[qt.qi[i]]
			x := q.FP ^ doc.FP
			if d := bits.OnesCount64(x); d <= f.K && f.f.First(x) == t {
				emit(q.Key, lines.NewMatch(doc.ID, doc.Name, doc.FP, d))
				n++
			}
		}
	}
	pairsFound.Inc(ctx, n)
	return nil
}

// ChunkQueries returns chunk c of n of the queries: each query is in one
// chunk, by a hash of its key, so that the chunks are about equal.
func ChunkQueries(s beam.Scope, queries beam.PCollection, c, n int) beam.PCollection {
	return beam.ParDo(s.Scope("neardup.ChunkQueries"), &chunkFn{C: c, N: n}, queries)
}

type chunkFn struct {
	C int `json:"c"`
	N int `json:"n"`
}

func (f *chunkFn) ProcessElement(q Query, emit func(Query)) {
	if xxhash.Sum64String(q.Key)%uint64(f.N) == uint64(f.C) {
		emit(q)
	}
}
