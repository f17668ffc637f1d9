package neardup

import (
	"context"
	"fmt"
	"reflect"
	"slices"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/simhashdb/simhashdb/permutation"
)

func init() {
	beam.RegisterType(reflect.TypeOf((*tableKeyFn)(nil)).Elem())
	register.Emitter2[uint64, []byte]()
}

// byTable groups distinct fingerprints (packed batches) by table of design
// d and the top groupBits bits of their permuted value (fewer if the
// table's prefix is shorter): KV<group, packed permuted values>, the group
// being the table in the top 8 bits and the bits below. A run of a table's
// prefix is always within one group, and 2^groupBits groups a table keep
// each small enough for a worker.
func byTable(s beam.Scope, distinct beam.PCollection, d *permutation.Design, groupBits int) (beam.PCollection, error) {
	if groupBits < 0 || groupBits > 32 {
		return beam.PCollection{}, fmt.Errorf("neardup: group bits %d, want 0 to 32", groupBits)
	}
	if len(d.Tables) > 255 {
		return beam.PCollection{}, fmt.Errorf("neardup: a design of %d tables, at most 255", len(d.Tables))
	}
	b, err := d.MarshalBinary()
	if err != nil {
		return beam.PCollection{}, err
	}
	keyed := beam.ParDo(s, &tableKeyFn{Design: b, GroupBits: groupBits}, distinct)
	return beam.GroupByKey(s, keyed), nil
}

// groupKey returns the group of a permuted value in table t.
func groupKey(t int, tb *permutation.Table, groupBits int, pv uint64) uint64 {
	g := min(groupBits, tb.Prefix)
	return uint64(t)<<56 | uint64(shardOf(pv, g))
}

// groupTable returns the table of a group.
func groupTable(key uint64) int { return int(key >> 56) }

type tableKeyFn struct {
	Design    []byte `json:"design"`
	GroupBits int    `json:"group_bits"`
	d         *permutation.Design
	buf       map[uint64][]byte
	held      int
	vals      []uint64
}

func (f *tableKeyFn) Setup() error {
	f.d = new(permutation.Design)
	return f.d.UnmarshalBinary(f.Design)
}

func (f *tableKeyFn) StartBundle(context.Context, func(uint64, []byte)) {
	f.buf, f.held = make(map[uint64][]byte), 0
}

func (f *tableKeyFn) ProcessElement(ctx context.Context, batch []byte, emit func(uint64, []byte)) error {
	var err error
	if f.vals, err = unpack(f.vals[:0], batch); err != nil {
		return err
	}
	for t := range f.d.Tables {
		tb := &f.d.Tables[t]
		for _, v := range f.vals {
			pv := tb.Permute(v)
			k := groupKey(t, tb, f.GroupBits, pv)
			b := appendFP(f.buf[k], pv)
			if len(b) == 8*BatchSize {
				shuffleBytes.Inc(ctx, int64(len(b)))
				emit(k, b)
				b = nil
			}
			f.buf[k] = b
		}
	}
	// A bundle holds at most about bundleLimit values, however many
	// groups there are: the price of many groups is smaller batches.
	if f.held += len(f.vals) * len(f.d.Tables); f.held >= bundleLimit {
		f.FinishBundle(ctx, emit)
	}
	return nil
}

func (f *tableKeyFn) FinishBundle(ctx context.Context, emit func(uint64, []byte)) {
	keys := make([]uint64, 0, len(f.buf))
	for k := range f.buf {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		if b := f.buf[k]; len(b) > 0 {
			shuffleBytes.Inc(ctx, int64(len(b)))
			emit(k, b)
		}
	}
	clear(f.buf)
	f.held = 0
}

// groupValues returns the sorted permuted values of a group.
func groupValues(batches func(*[]byte) bool) ([]uint64, error) {
	var vals []uint64
	var b []byte
	for batches(&b) {
		var err error
		if vals, err = unpack(vals, b); err != nil {
			return nil, err
		}
	}
	slices.Sort(vals)
	return vals, nil
}
