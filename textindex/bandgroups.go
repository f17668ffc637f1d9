package textindex

import (
	"cmp"
	"context"
	"iter"
	"slices"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/radix"
	"github.com/simhashdb/simhashdb/join"
	"github.com/simhashdb/simhashdb/sketch"
)

// bandGroups is Group over the band join's pairs without holding their
// documents: the pairs are kept as ids (24 bytes a pair), grouped, and the
// groups' documents read again from the same snapshot into a sort by group
// and id, so that memory follows the pairs' ids and JoinOptions, not the
// documents' names and records.
func bandGroups(ctx context.Context, db *engine.DB, l sketch.Layout, threshold float64, star bool, o JoinOptions) iter.Seq2[[]engine.Doc, error] {
	return func(yield func([]engine.Doc, error) bool) {
		j := &bandJoin{ctx: ctx, db: db, l: l, o: o}
		if j.o.Memory <= 0 {
			j.o.Memory = DefaultJoinMemory
		}
		defer j.close()
		var edges []join.Pair
		err := j.run(threshold, func(p Pair, err error) bool {
			edges = append(edges, join.Pair{A: p.A.ID, B: p.B.ID})
			return true
		}, true)
		if err != nil {
			yield(nil, err)
			return
		}
		defer j.snap.Close()
		ids := make([]uint64, 0, 2*len(edges))
		for _, e := range edges {
			ids = append(ids, e.A, e.B)
		}
		radix.Sort(ids)
		ids = slices.Compact(ids)
		groups := join.Components(edges)
		if star {
			groups = join.Stars(edges, ids)
		}
		edges = nil
		// Each grouped id's group and place in it, by id.
		type member struct{ id, group, at uint64 }
		members := make([]member, 0, len(ids))
		n := 0
		for _, ms := range groups {
			if len(ms) < 2 {
				continue // a leader whose neighbours other stars took
			}
			for at, id := range ms {
				members = append(members, member{id, uint64(n), uint64(at)})
			}
			n++
		}
		groups, ids = nil, nil
		slices.SortFunc(members, func(a, b member) int { return cmp.Compare(a.id, b.id) })
		byGroup := j.sorter(2)
		var v []byte
		for d, err := range j.scan(ctx) {
			if err != nil {
				yield(nil, err)
				return
			}
			i, ok := slices.BinarySearchFunc(members, d.ID, func(m member, id uint64) int { return cmp.Compare(m.id, id) })
			if !ok {
				continue
			}
			v = appendDocValue(v[:0], d)
			if err := byGroup.Add(members[i].group, members[i].at, v); err != nil {
				yield(nil, err)
				return
			}
		}
		members = nil
		m, err := byGroup.Merge()
		if err != nil {
			yield(nil, err)
			return
		}
		var group []engine.Doc
		cur := uint64(0)
		for m.Next() {
			r := m.Record()
			if r.A != cur && len(group) > 0 {
				if !yield(group, nil) {
					return
				}
				group = nil
			}
			cur = r.A
			group = append(group, j.docOfValue(r.V))
		}
		if err := m.Err(); err != nil {
			yield(nil, err)
			return
		}
		if len(group) > 0 {
			yield(group, nil)
		}
	}
}
