package engine

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/cockroachdb/pebble/v2"
	"github.com/simhashdb/simhashdb/engine/internal/radix"
	"github.com/simhashdb/simhashdb/engine/join"
)

// Pair is two documents within the distance of FindAll, A.ID < B.ID.
type Pair struct {
	A, B     Doc
	Distance int
}

// FindAll returns every pair of stored documents within distance k <= K
// (the self-join), by A's id and then B's. Documents that share a
// fingerprint are pairs at distance 0. Each table is read once in order:
// its runs of fingerprints that share the table's prefix are compared among
// themselves (package join), and a pair that several tables bring together
// is reported by the first. Documents still in the memtable are queried
// against everything. The result is of one state of the index; writers wait
// while it is computed.
func (e *DB) FindAll(ctx context.Context, k int) iter.Seq2[Pair, error] {
	return func(yield func(Pair, error) bool) {
		pairs, err := e.findAll(ctx, k)
		if err != nil {
			yield(Pair{}, err)
			return
		}
		for _, p := range pairs {
			if !yield(p, nil) {
				return
			}
		}
	}
}

func (e *DB) findAll(ctx context.Context, k int) ([]Pair, error) {
	f, err := join.New(e.design, k)
	if err != nil {
		return nil, fmt.Errorf("%w: k = %d, the index answers up to %d", ErrDistance, k, e.design.K)
	}
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return nil, ErrClosed
	}
	st := e.st
	fpPairs, err := e.tablePairs(ctx, st, f)
	if err != nil {
		return nil, err
	}
	var out []Pair
	// The flushed documents of every fingerprint in a pair, and pairs of
	// documents that share a fingerprint.
	docs, err := e.pairDocs(st, slices.Concat(fpPairs...), &out)
	if err != nil {
		return nil, err
	}
	for _, ps := range fpPairs {
		for _, p := range ps {
			for _, a := range docs[p.A] {
				for _, b := range docs[p.B] {
					out = append(out, orderedPair(a, b, p.Distance))
				}
			}
		}
	}
	// Memtable documents, against everything.
	var it *pebble.Iterator
	defer func() { st.release(it) }()
	live := e.memDocs()
	for i, d := range live {
		if i%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		ms, err := e.queryLocked(ctx, d.Fingerprint, k)
		if err != nil {
			return nil, err
		}
		for _, m := range ms {
			if m.ID == d.ID {
				continue
			}
			if _, inMem := e.memDoc(m.ID); inMem && m.ID < d.ID {
				continue // reported when m was the query
			}
			out = append(out, orderedPair(d, m.Doc, m.Distance))
		}
	}
	slices.SortFunc(out, func(a, b Pair) int { return cmp.Or(cmp.Compare(a.A.ID, b.A.ID), cmp.Compare(a.B.ID, b.B.ID)) })
	return out, nil
}

func orderedPair(a, b Doc, d int) Pair {
	if a.ID > b.ID {
		a, b = b, a
	}
	return Pair{a, b, d}
}

// pairDocs returns the flushed, unhidden documents of each fingerprint in
// pairs, and appends to out the pairs of flushed documents that share a
// fingerprint. When every flushed fingerprint has one document, it seeks
// only the fingerprints of pairs; otherwise it reads all postings in order.
func (e *DB) pairDocs(st *state, pairs []join.Pair, out *[]Pair) (map[uint64][]Doc, error) {
	want := make([]uint64, 0, 2*len(pairs))
	for _, p := range pairs {
		want = append(want, p.A, p.B)
	}
	radix.Sort(want)
	want = slices.Compact(want)
	docs := make(map[uint64][]Doc, len(want))
	if st.docs == st.fps {
		var it *pebble.Iterator
		defer func() { st.release(it) }()
		var ms []Match
		for _, fp := range want {
			var err error
			if ms, err = e.postings(st, &it, fp, 0, ms[:0]); err != nil {
				return nil, err
			}
			for _, m := range ms {
				docs[fp] = append(docs[fp], m.Doc)
			}
		}
		return docs, nil
	}
	var group []Doc
	flush := func() {
		for i, a := range group {
			for _, b := range group[i+1:] {
				*out = append(*out, orderedPair(a, b, 0))
			}
		}
		if len(group) > 0 {
			if _, ok := slices.BinarySearch(want, group[0].Fingerprint); ok {
				docs[group[0].Fingerprint] = slices.Clone(group)
			}
		}
		group = group[:0]
	}
	err := scanReader(st.snap, spacePrefix(spacePostings), func(key, v []byte) error {
		fp, id, err := parsePostingKey(key)
		if err != nil {
			return err
		}
		if len(group) > 0 && group[0].Fingerprint != fp {
			flush()
		}
		if !e.hidden(id) {
			group = append(group, Doc{id, fp, string(v)})
		}
		return nil
	})
	flush()
	return docs, err
}

// memDocs returns the live documents of the memtables, the newest write of
// each id.
func (e *DB) memDocs() []Doc {
	var out []Doc
	for id, d := range e.mem.docs {
		if d.live {
			out = append(out, Doc{id, d.fp, d.name})
		}
	}
	if e.imm != nil {
		for id, d := range e.imm.docs {
			if d.live && !e.mem.touched.Contains(id) {
				out = append(out, Doc{id, d.fp, d.name})
			}
		}
	}
	slices.SortFunc(out, func(a, b Doc) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// memDoc returns the memtables' newest live write of id.
func (e *DB) memDoc(id uint64) (Doc, bool) {
	for _, m := range []*memtable{e.mem, e.imm} {
		if m == nil {
			continue
		}
		if d, ok := m.docs[id]; ok {
			return Doc{id, d.fp, d.name}, d.live
		}
	}
	return Doc{}, false
}

// Clusters returns the connected components of the graph whose edges are
// the pairs within distance k (FindAll's pairs), each as its documents by
// id, the clusters by their smallest id. Documents with no neighbour are
// left out. A cluster is connected, not close: two of its members can be
// much farther apart than k when a chain of near-duplicates links them.
func (e *DB) Clusters(ctx context.Context, k int) iter.Seq2[[]Doc, error] {
	return func(yield func([]Doc, error) bool) {
		pairs, err := e.findAll(ctx, k)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, c := range clusters(pairs) {
			if !yield(c, nil) {
				return
			}
		}
	}
}

// clusters groups the pairs' documents with join.Components over their ids.
func clusters(pairs []Pair) [][]Doc {
	docs := map[uint64]Doc{}
	edges := make([]join.Pair, len(pairs))
	for i, p := range pairs {
		docs[p.A.ID], docs[p.B.ID] = p.A, p.B
		edges[i] = join.Pair{A: p.A.ID, B: p.B.ID}
	}
	comps := join.Components(edges)
	out := make([][]Doc, len(comps))
	for i, c := range comps {
		out[i] = make([]Doc, len(c))
		for j, id := range c {
			out[i][j] = docs[id]
		}
	}
	return out
}

// tablePairs returns the pairs of distinct flushed fingerprints that f
// finds, table by table: each table is read once, in order, its blocks
// merged with their pending lists.
func (e *DB) tablePairs(ctx context.Context, st *state, f *join.Finder) ([][]join.Pair, error) {
	return parallel(ctx, len(e.design.Tables), func(t int) ([]join.Pair, error) {
		var out []join.Pair
		s := f.NewScan(t, func(p join.Pair) bool { out = append(out, p); return true })
		var buf []uint64
		ti, j := &st.tables[t], 0
		err := scanReader(st.snap, tablePrefix(spaceTables, t), func(k, v []byte) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			_, last, err := parseTableKey(spaceTables, k, len(st.tables))
			if err != nil {
				return err
			}
			if j >= len(ti.keys) || ti.keys[j] != last {
				return corruptBlock(t, last, "not in the block directory")
			}
			if buf, err = decodeValue(buf[:0], v, ti.codes, t, last); err != nil {
				return err
			}
			fps, err := withPending(st.snap, t, last, ti.pending(j), buf)
			if err != nil {
				return err
			}
			j++
			s.Feed(fps)
			return nil
		})
		s.Close()
		return out, err
	})
}
