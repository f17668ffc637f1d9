package neardup

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
)

func init() {
	register.DoFn3x0[context.Context, Doc, func(int, []byte)](&countFn{})
	beam.RegisterType(reflect.TypeOf((*mergeCountsFn)(nil)).Elem())
	register.Emitter1[[]byte]()
	register.Emitter2[int, []byte]()
	register.Emitter2[uint64, int64]()
	register.Iter1[[]byte]()
}

// Distinct collapses exact duplicates among docs' fingerprints: distinct
// is each fingerprint once, in packed batches (sorted within a batch), and
// dups is each fingerprint that occurs more than once with how often
// (KV<uint64, int64>). Fingerprints are counted within a bundle before the
// shuffle, so that a value repeated in every document (fingerprint 0 of
// every empty page) crosses it once a bundle, and then grouped by their
// top shardBits bits (0 to 24), 2^shardBits groups that each fit a
// worker's memory.
func Distinct(s beam.Scope, docs beam.PCollection, shardBits int) (distinct, dups beam.PCollection, err error) {
	if shardBits < 0 || shardBits > 24 {
		return beam.PCollection{}, beam.PCollection{}, fmt.Errorf("neardup.Distinct: shardBits %d, want 0 to 24", shardBits)
	}
	s = s.Scope("neardup.Distinct")
	counted := beam.ParDo(s, &countFn{ShardBits: shardBits}, docs)
	distinct, dups = beam.ParDo2(s, &mergeCountsFn{}, beam.GroupByKey(s, counted))
	return distinct, dups, nil
}

// bundleLimit is the most distinct values a DoFn holds between flushes.
const bundleLimit = 1 << 20

type countFn struct {
	ShardBits int `json:"shard_bits"`
	counts    map[uint64]int64
}

func (f *countFn) StartBundle(context.Context, func(int, []byte)) {
	f.counts = make(map[uint64]int64)
}

func (f *countFn) ProcessElement(ctx context.Context, d Doc, emit func(int, []byte)) {
	f.counts[d.FP]++
	if len(f.counts) >= bundleLimit {
		f.flush(ctx, emit)
	}
}

func (f *countFn) FinishBundle(ctx context.Context, emit func(int, []byte)) {
	f.flush(ctx, emit)
}

func (f *countFn) flush(ctx context.Context, emit func(int, []byte)) {
	vs := make([]uint64, 0, len(f.counts))
	for v := range f.counts {
		vs = append(vs, v)
	}
	slices.Sort(vs)
	for i := 0; i < len(vs); {
		sh := shardOf(vs[i], f.ShardBits)
		var b []byte
		j := i
		for ; j < len(vs) && shardOf(vs[j], f.ShardBits) == sh && j-i < BatchSize; j++ {
			b = appendCounted(b, vs[j], f.counts[vs[j]])
		}
		shuffleBytes.Inc(ctx, int64(len(b)))
		emit(sh, b)
		i = j
	}
	clear(f.counts)
}

// shardOf returns the top bits bits of v.
func shardOf(v uint64, bits int) int {
	if bits == 0 {
		return 0
	}
	return int(v >> (64 - bits))
}

type mergeCountsFn struct{}

func (mergeCountsFn) ProcessElement(ctx context.Context, _ int, batches func(*[]byte) bool, emit func([]byte), dup func(uint64, int64)) error {
	all, err := collectCounted(batches)
	if err != nil {
		return err
	}
	var out []byte
	for i := 0; i < len(all); {
		v, n := all[i].v, int64(0)
		for ; i < len(all) && all[i].v == v; i++ {
			n += all[i].n
		}
		distinctFPs.Inc(ctx, 1)
		if n > 1 {
			duplicateSets.Inc(ctx, 1)
			dup(v, n)
		}
		out = appendFP(out, v)
		if len(out) == 8*BatchSize {
			emit(out)
			out = nil
		}
	}
	if len(out) > 0 {
		emit(out)
	}
	return nil
}
