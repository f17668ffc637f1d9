package engine

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"math/bits"
	"runtime"
	"slices"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/engine/internal/tasks"
	"github.com/simhashdb/simhashdb/internal/radix"
)

// BatchResult is the answer to one query of QueryBatch.
type BatchResult struct {
	// Index is the query's position in the batch.
	Index   int
	Query   uint64
	Matches []Match // nearest first, then by id
}

// batchHit is a stored fingerprint within distance of query q.
type batchHit struct {
	q  uint32
	d  uint8
	fp uint64
}

// QueryBatch answers many queries at once, as Query would answer each, in
// the order given. It is the paper's batch mode: each table sorts the
// permuted queries and walks the stored table once, in order, decoding only
// the blocks whose range holds a query's prefix and comparing each stored
// fingerprint there with every query of that prefix; the tables run on
// every core. The whole batch sees one state of the index; writers do not
// wait for it (a batch of more than a few thousand queries computes on a
// pinned view, see view.go).
func (db *DB) QueryBatch(ctx context.Context, queries []uint64, k int) iter.Seq2[BatchResult, error] {
	return storeSeq(func(yield func(BatchResult, error) bool) {
		if err := db.checkDistance(k); err != nil {
			yield(BatchResult{}, err)
			return
		}
		if int64(len(queries)) > 1<<31 {
			yield(BatchResult{}, fmt.Errorf("%w: %d queries in one batch, at most 2^31", ErrInput, len(queries)))
			return
		}
		res, err := db.queryBatch(ctx, queries, k)
		if err != nil {
			yield(BatchResult{}, err)
			return
		}
		for i := range queries {
			db.outMatches(res[i])
			if !yield(BatchResult{i, queries[i], res[i]}, nil) {
				return
			}
		}
	})
}

// pinQueries is the number of queries from which a QueryBatch computes on a
// pinned view rather than holding db.mu: a freeze costs the flush that
// follows it, and a short batch holds writers back less than that.
const pinQueries = 4096

func (db *DB) queryBatch(ctx context.Context, queries []uint64, k int) ([][]Match, error) {
	var v *view
	if len(queries) >= pinQueries {
		var err error
		if v, err = db.pinView(); err != nil {
			return nil, err
		}
		defer v.unpin(db)
	} else {
		if err := db.rlockOpen(); err != nil {
			return nil, err
		}
		defer db.mu.RUnlock()
		lv := db.lockedView()
		v = &lv
	}
	st := v.st
	hits, err := tasks.Parallel(ctx, len(db.design.Tables), func(t int) ([]batchHit, error) {
		return db.batchTable(ctx, st, t, queries, k)
	})
	if err != nil {
		return nil, err
	}
	all := slices.Concat(hits...)
	slices.SortFunc(all, func(a, b batchHit) int { return cmp.Or(cmp.Compare(a.q, b.q), cmp.Compare(a.fp, b.fp)) })
	out := make([][]Match, len(queries))
	memEmpty := v.memEmpty()
	// Expanding fingerprints to documents seeks the postings: spread the
	// queries over every core, each part with its own iterator.
	parts := min(len(queries), 4*runtime.GOMAXPROCS(0))
	_, err = tasks.Parallel(ctx, parts, func(p int) ([]struct{}, error) {
		lo, hi := p*len(queries)/parts, (p+1)*len(queries)/parts
		a, _ := slices.BinarySearchFunc(all, uint32(lo), func(h batchHit, q uint32) int { return cmp.Compare(h.q, q) })
		b, _ := slices.BinarySearchFunc(all, uint32(hi), func(h batchHit, q uint32) int { return cmp.Compare(h.q, q) })
		return nil, db.expandBatch(ctx, v, queries, all[a:b], lo, hi, k, memEmpty, out)
	})
	return out, err
}

// expandBatch fills out[lo:hi] from the hits of those queries (sorted by
// query) and the memtables.
func (db *DB) expandBatch(ctx context.Context, v *view, queries []uint64, hits []batchHit, lo, hi, k int, memEmpty bool, out [][]Match) error {
	var it *store.Iter
	defer func() { v.st.release(it) }()
	var cands []candidate
	for i := lo; i < hi; i++ {
		if i%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		cands = cands[:0]
		for len(hits) > 0 && hits[0].q == uint32(i) {
			cands = append(cands, candidate{hits[0].fp, int(hits[0].d)})
			hits = hits[1:]
		}
		if !memEmpty {
			add := func(fp uint64, d int) { cands = append(cands, candidate{fp, d}) }
			v.search(queries[i], k, add)
		}
		if len(cands) == 0 {
			continue
		}
		var err error
		if out[i], err = db.expand(v, cands, &it, nil); err != nil {
			return err
		}
	}
	return nil
}

// batchTable merges the sorted permuted queries with table t.
func (db *DB) batchTable(ctx context.Context, st *state, t int, queries []uint64, k int) ([]batchHit, error) {
	tb := &db.design.Tables[t]
	pq := make([]uint64, len(queries))
	qi := make([]uint32, len(queries))
	for i, q := range queries {
		pq[i], qi[i] = tb.Permute(q), uint32(i)
	}
	radix.SortPairs(pq, qi)
	ti := &st.tables[t]
	var hits []batchHit
	cur := -1 // the block in blk
	var blk *cache.Entry
	keys := ti.Keys()
	for i := 0; i < len(pq); {
		if i&1023 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		lo, hi := tb.Range(pq[i])
		j := i + 1
		for j < len(pq) && pq[j] <= hi {
			j++
		}
		for b := ti.Start(lo); b < len(keys); b++ {
			if b != cur {
				var err error
				if blk, err = st.blocks.Block(t, b); err != nil {
					return nil, err
				}
				cur = b
			}
			match := func(v uint64) {
				for q := i; q < j; q++ {
					if d := bits.OnesCount64(v ^ pq[q]); d <= k {
						hits = append(hits, batchHit{qi[q], uint8(d), tb.Unpermute(v)})
					}
				}
			}
			blk.Each(lo, hi, match)
			if keys[b] >= hi {
				break
			}
		}
		i = j
	}
	return hits, nil
}
