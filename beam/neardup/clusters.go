package neardup

import (
	"context"
	"encoding/binary"
	"fmt"
	"reflect"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/register"
	"github.com/simhashdb/simhashdb/internal/lines"
)

// Connected components, at cluster scale, by the large-star and small-star
// operations of Kiveris et al. (Connected Components in MapReduce and
// Beyond, SoCC 2014), alternated until a round changes no edge: then every
// component is a star whose centre is its smallest node, and StarClusters
// writes each as a line. Each operation is a shuffle by node; a node's
// neighbours stream past once, after their minimum is known, never held,
// so a centre of a million nodes costs no memory. The rounds are run by
// the program, one pipeline each, until CounterStarChanges is 0: O(log n)
// rounds.

func init() {
	beam.RegisterFunction(bothWays)
	beam.RegisterFunction(towardSmaller)
	beam.RegisterType(reflect.TypeOf((*largeStarFn)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*smallStarFn)(nil)).Elem())
	beam.RegisterFunction(edgeAndCentre)
	beam.RegisterFunction(edgeKey)
	beam.RegisterFunction(firstOf)
	beam.RegisterFunction(keyEdge)
	register.Emitter2[string, bool]()
	beam.RegisterFunction(minUint64)
	beam.RegisterType(reflect.TypeOf((*memberFn)(nil)).Elem())
	beam.RegisterType(reflect.TypeOf((*clusterLineFn)(nil)).Elem())
	register.Iter1[uint64]()
	register.Iter1[int64]()
}

// StarRound is one round: large-star, then small-star, on edges
// (KV<uint64, uint64>, no self-loops), each followed by removing duplicate
// edges. It counts the edges it changed in CounterStarChanges.
func StarRound(s beam.Scope, edges beam.PCollection) beam.PCollection {
	s = s.Scope("neardup.StarRound")
	large := distinctEdges(s, star(s, &largeStarFn{}, beam.ParDo(s, bothWays, edges)))
	return distinctEdges(s, star(s, &smallStarFn{}, beam.ParDo(s, towardSmaller, large)))
}

// star applies a star operation to the neighbourhoods of directed edges:
// each node's smallest neighbour is found first (combined before the
// shuffle), so that the operation reads the neighbours once, as they
// stream, and holds none of them.
func star(s beam.Scope, fn any, directed beam.PCollection) beam.PCollection {
	mins := beam.CombinePerKey(s, minUint64, directed)
	return beam.ParDo(s, fn, beam.CoGroupByKey(s, mins, directed))
}

// distinctEdges removes repeated edges: keyed by the edge (16 bytes),
// combined before the shuffle.
func distinctEdges(s beam.Scope, edges beam.PCollection) beam.PCollection {
	keyed := beam.ParDo(s, edgeKey, edges)
	return beam.ParDo(s, keyEdge, beam.CombinePerKey(s, firstOf, keyed))
}

func edgeKey(u, v uint64, emit func(string, bool)) {
	var b [16]byte
	binary.BigEndian.PutUint64(b[:], u)
	binary.BigEndian.PutUint64(b[8:], v)
	emit(string(b[:]), true)
}

func firstOf(a, _ bool) bool { return a }

func keyEdge(k string, _ bool, emit func(uint64, uint64)) error {
	if len(k) != 16 {
		return fmt.Errorf("neardup: edge key of %d bytes, want 16", len(k))
	}
	emit(binary.BigEndian.Uint64([]byte(k)), binary.BigEndian.Uint64([]byte(k[8:])))
	return nil
}

func bothWays(u, v uint64, emit func(uint64, uint64)) {
	emit(u, v)
	emit(v, u)
}

func towardSmaller(u, v uint64, emit func(uint64, uint64)) {
	if v <= u {
		emit(u, v)
	} else {
		emit(v, u)
	}
}

// largeStarFn links every larger neighbour of u to the smallest node of
// u's neighbourhood, u included.
type largeStarFn struct{}

func (largeStarFn) ProcessElement(ctx context.Context, u uint64, mins, nbrs func(*uint64) bool, emit func(uint64, uint64)) {
	m, v := u, uint64(0)
	if mins(&v) {
		m = min(m, v)
	}
	var changed int64
	for nbrs(&v) {
		if v > u {
			emit(v, m)
			if m != u {
				changed++
			}
		}
	}
	starChanges.Inc(ctx, changed)
}

// smallStarFn links u and its neighbours, all smaller (towardSmaller), to
// the smallest of them.
type smallStarFn struct{}

func (smallStarFn) ProcessElement(ctx context.Context, u uint64, mins, nbrs func(*uint64) bool, emit func(uint64, uint64)) {
	m, v := u, uint64(0)
	if mins(&v) {
		m = min(m, v)
	}
	n := int64(0)
	for nbrs(&v) {
		if v != m {
			emit(v, m)
		}
		n++
	}
	if m != u {
		emit(u, m)
	}
	starChanges.Inc(ctx, max(n-1, 0))
}

// StarClusters writes the clusters of star-form edges (each node linked to
// its component's smallest node, as StarRound leaves them once converged)
// as simhashdb find-clusters writes them: a JSON array of each component's
// fingerprints, ascending, each as often as it occurs (dups, from
// Distinct); a fingerprint that occurs more than once and has no
// neighbour is a cluster of its copies. Each cluster's line is built on one
// worker, so the largest cluster must fit its memory.
func StarClusters(s beam.Scope, edges, dups beam.PCollection) beam.PCollection {
	s = s.Scope("neardup.StarClusters")
	// Every node's centre: its edge's other end, or itself for a centre
	// (combined before the shuffle: a centre is named by every member).
	centres := beam.CombinePerKey(s, minUint64, beam.ParDo(s, edgeAndCentre, edges))
	members := beam.ParDo(s, &memberFn{}, beam.CoGroupByKey(s, centres, dups))
	return beam.ParDo(s, &clusterLineFn{}, beam.GroupByKey(s, members))
}

func edgeAndCentre(v, c uint64, emit func(uint64, uint64)) {
	emit(v, c)
	emit(c, c)
}

func minUint64(a, b uint64) uint64 { return min(a, b) }

// memberFn sends a node and its count to its cluster's centre.
type memberFn struct{}

func (memberFn) ProcessElement(ctx context.Context, v uint64, centres func(*uint64) bool, counts func(*int64) bool, emit func(uint64, []byte)) error {
	c, n := v, int64(1)
	var x uint64
	hasCentre := centres(&x)
	if hasCentre {
		c = x
	}
	var k int64
	if counts(&k) {
		n = k
	} else if !hasCentre {
		return fmt.Errorf("neardup: node %d has neither an edge nor a count", v)
	}
	emit(c, appendCounted(nil, v, n))
	return nil
}

type clusterLineFn struct{}

func (clusterLineFn) ProcessElement(ctx context.Context, _ uint64, members func(*[]byte) bool, emit func(string)) error {
	all, err := collectCounted(members)
	if err != nil {
		return err
	}
	var vs []uint64
	for _, m := range all {
		for range m.n {
			vs = append(vs, m.v)
		}
	}
	line := lines.AppendArray(nil, vs...)
	clustersCount.Inc(ctx, 1)
	emit(string(line[:len(line)-1]))
	return nil
}
