package engine

import (
	"cmp"
	"context"
	"iter"
	"slices"

	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/engine/internal/table"
	"github.com/simhashdb/simhashdb/engine/internal/tasks"
	"github.com/simhashdb/simhashdb/internal/radix"
	"github.com/simhashdb/simhashdb/join"
)

// Pair is two documents within the distance of FindAll, A.ID < B.ID.
type Pair struct {
	A, B     Doc
	Distance int
}

// FindAll returns every pair of stored documents within distance k <= K
// (the self-join), each once with A.ID < B.ID. Documents that share a
// fingerprint are pairs at distance 0. Each table is read once in order:
// its runs of fingerprints that share the table's prefix are compared among
// themselves (package join), and a pair that several tables bring together
// is reported by the first. Fingerprints still in the memtable are probed
// against everything.
//
// The work is done at the level of distinct fingerprints, and the pairs of
// documents are produced as they are read: memory is proportional to the
// documents that have a near-duplicate, not to the pairs, which grow with
// the square of a fingerprint's documents (every empty page has
// fingerprint 0). The pairs come fingerprint by fingerprint: first those of
// documents that share one, then those of near fingerprints, each group in
// fingerprint order and by id within it, so the same documents give the
// same output whether a flush has moved them or not. They are of one state
// of the index, the one when FindAll began; writes go on meanwhile.
func (db *DB) FindAll(ctx context.Context, k int) iter.Seq2[Pair, error] {
	return storeSeq(func(yield func(Pair, error) bool) {
		g, err := db.nearGraph(ctx, k)
		if err != nil {
			yield(Pair{}, err)
			return
		}
		n := 0
		emit := func(a, b Doc, d int) bool {
			if n++; n%4096 == 0 && ctx.Err() != nil {
				yield(Pair{}, ctx.Err())
				return false
			}
			return yield(orderedPair(a, b, d), nil)
		}
		for _, ds := range g.docs {
			for i, a := range ds {
				for _, b := range ds[i+1:] {
					if !emit(a, b, 0) {
						return
					}
				}
			}
		}
		for _, p := range g.pairs {
			for _, a := range g.docs[p.A] {
				for _, b := range g.docs[p.B] {
					if !emit(a, b, p.Distance) {
						return
					}
				}
			}
		}
	})
}

func orderedPair(a, b Doc, d int) Pair {
	if a.ID > b.ID {
		a, b = b, a
	}
	return Pair{a, b, d}
}

// Clusters returns the connected components of the graph whose edges are
// the pairs within distance k (FindAll's pairs), each as its documents by
// id, the clusters by their smallest id. Documents with no neighbour are
// left out. A cluster is connected, not close: two of its members can be
// much farther apart than k when a chain of near-duplicates links them.
// The components are found over distinct fingerprints, so memory is
// proportional to the documents in clusters, however many share one
// fingerprint.
func (db *DB) Clusters(ctx context.Context, k int) iter.Seq2[[]Doc, error] {
	return storeSeq(func(yield func([]Doc, error) bool) {
		g, err := db.nearGraph(ctx, k)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, c := range g.clusters() {
			if !yield(c, nil) {
				return
			}
		}
	})
}

// Stars returns clusters whose members all lie within k of a centre: the
// documents are taken by id, and each that no star holds yet becomes a
// centre and takes every document within k of it not yet taken (leader
// clustering; the document stored first leads). Each star is its centre,
// then the other members by id, so two members are at most 2k apart; the
// stars come in their centres' order. Unlike Clusters, a chain of
// near-duplicates does not make one large group of documents far apart:
// choose Stars to keep one document of each group of near-duplicates,
// Clusters to find everything that is connected. Documents with no
// neighbour are left out.
func (db *DB) Stars(ctx context.Context, k int) iter.Seq2[[]Doc, error] {
	return storeSeq(func(yield func([]Doc, error) bool) {
		g, err := db.nearGraph(ctx, k)
		if err != nil {
			yield(nil, err)
			return
		}
		for _, c := range g.stars() {
			if !yield(c, nil) {
				return
			}
		}
	})
}

// stars is Stars over g: the fingerprints lead in the order of their
// first documents.
func (g *nearGraph) stars() [][]Doc {
	order := make([]uint64, len(g.docs))
	for i := range order {
		order[i] = uint64(i)
	}
	slices.SortFunc(order, func(a, b uint64) int { return cmp.Compare(g.docs[a][0].ID, g.docs[b][0].ID) })
	var out [][]Doc
	for _, s := range join.Stars(g.pairs, order) {
		// The centre is the first document of the leading fingerprint; its
		// other documents and the members' follow by id.
		c := slices.Clone(g.docs[s[0]])
		for _, i := range s[1:] {
			c = append(c, g.docs[i]...)
		}
		if len(c) > 1 {
			slices.SortFunc(c[1:], func(a, b Doc) int { return cmp.Compare(a.ID, b.ID) })
			out = append(out, c)
		}
	}
	return out
}

// nearGraph is the index at one moment as FindAll and Clusters see it: the
// live documents (by id) of every fingerprint in a pair within k whose
// fingerprints both have live documents, or shared by several documents,
// one entry of docs a fingerprint in fingerprint order; and those pairs,
// in order, A and B their fingerprints' places in docs. Places rather than
// fingerprints: a graph of a million pairs is looked up several million
// times, and a slice costs a fraction of a map's lookups.
type nearGraph struct {
	pairs []join.Pair
	docs  [][]Doc
}

// clusters groups g's documents by the connected components of its
// fingerprints.
func (g *nearGraph) clusters() [][]Doc {
	edges := slices.Clone(g.pairs)
	for i, ds := range g.docs {
		if len(ds) > 1 {
			edges = append(edges, join.Pair{A: uint64(i), B: uint64(i)})
		}
	}
	var out [][]Doc
	for _, comp := range join.Components(edges) {
		var c []Doc
		for _, i := range comp {
			c = append(c, g.docs[i]...)
		}
		slices.SortFunc(c, func(a, b Doc) int { return cmp.Compare(a.ID, b.ID) })
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b []Doc) int { return cmp.Compare(a[0].ID, b[0].ID) })
	return out
}

// nearGraph gathers g from a pinned view: writers go on meanwhile.
func (db *DB) nearGraph(ctx context.Context, k int) (*nearGraph, error) {
	if err := db.checkDistance(k); err != nil {
		return nil, err
	}
	f, err := join.New(db.design, k)
	if err != nil {
		return nil, err
	}
	v, err := db.pinView()
	if err != nil {
		return nil, err
	}
	defer v.unpin(db)
	st := v.st
	byTable, err := db.tablePairs(ctx, st, f)
	if err != nil {
		return nil, err
	}
	pairs := slices.Concat(byTable...)
	mem := memDocsByFP(v.memDocs())
	memPairs, err := db.memPairs(ctx, v, mem, k)
	if err != nil {
		return nil, err
	}
	// In fingerprint order, whatever the tables and the memtables each
	// hold: the same documents give the same answer before a flush and
	// after it. A pair of flushed fingerprints may come again from the
	// memtable.
	pairs = append(pairs, memPairs...)
	slices.SortFunc(pairs, func(a, b join.Pair) int { return cmp.Or(cmp.Compare(a.A, b.A), cmp.Compare(a.B, b.B)) })
	pairs = slices.CompactFunc(pairs, func(a, b join.Pair) bool { return a.A == b.A && a.B == b.B })
	want := make([]uint64, 0, 2*len(pairs)+len(mem))
	for _, p := range pairs {
		want = append(want, p.A, p.B)
	}
	for fp := range mem {
		want = append(want, fp)
	}
	radix.Sort(want)
	want = slices.Compact(want)
	fps, docs, err := db.flushedDocs(v, want)
	if err != nil {
		return nil, err
	}
	place := func(fp uint64) int {
		i, _ := slices.BinarySearch(fps, fp)
		return i
	}
	for fp, ds := range mem {
		i := place(fp)
		docs[i] = append(docs[i], ds...)
	}
	// A pair counts only when both fingerprints have live documents: the
	// tables and the memtable's index keep fingerprints whose documents a
	// newer write deleted, and such a fingerprint must not link two others.
	live := pairs[:0]
	paired := make([]bool, len(fps))
	for _, p := range pairs {
		a, b := place(p.A), place(p.B)
		if len(docs[a]) > 0 && len(docs[b]) > 0 {
			live = append(live, join.Pair{A: uint64(a), B: uint64(b), Distance: p.Distance})
			paired[a], paired[b] = true, true
		}
	}
	// A fingerprint in no pair counts only when documents share it.
	g := &nearGraph{}
	to := make([]int, len(fps))
	for i, ds := range docs {
		if len(ds) > 1 || len(ds) == 1 && paired[i] {
			slices.SortFunc(ds, func(a, b Doc) int { return cmp.Compare(a.ID, b.ID) })
			for j := range ds {
				db.outDoc(&ds[j])
			}
			to[i] = len(g.docs)
			g.docs = append(g.docs, ds)
		}
	}
	for i := range live {
		live[i].A, live[i].B = uint64(to[live[i].A]), uint64(to[live[i].B])
	}
	g.pairs = live
	return g, nil
}

// memPairs returns the pairs of distinct fingerprints within k of which at
// least one is a memtable document's: each is probed against the tables
// and the memtables.
func (db *DB) memPairs(ctx context.Context, v *view, mem map[uint64][]Doc, k int) ([]join.Pair, error) {
	var out []join.Pair
	i := 0
	for fp := range mem {
		if i++; i%1024 == 0 && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		add := func(c uint64, d int) {
			if c != fp {
				out = append(out, join.Pair{A: min(fp, c), B: max(fp, c), Distance: d})
			}
		}
		if err := v.st.blocks.ProbeAll(fp, k, add); err != nil {
			return nil, err
		}
		v.search(fp, k, add)
	}
	return out, nil
}

// flushedDocs returns the flushed documents that no memtable hides, by
// fingerprint, in fingerprint order: those of every fingerprint in want
// (sorted; an entry, empty or not, for each), and of every other
// fingerprint that several documents share. When every flushed
// fingerprint has one document it seeks only want; otherwise it reads all
// postings in order.
func (db *DB) flushedDocs(v *view, want []uint64) ([]uint64, [][]Doc, error) {
	st := v.st
	docs := make([][]Doc, 0, len(want))
	if st.docs == st.fps {
		var it *store.Iter
		defer func() { st.release(it) }()
		var ms []Match
		for _, fp := range want {
			var err error
			if ms, err = db.postings(v, &it, fp, 0, ms[:0]); err != nil {
				return nil, nil, err
			}
			var ds []Doc
			for _, m := range ms {
				ds = append(ds, m.Doc)
			}
			docs = append(docs, ds)
		}
		return want, docs, nil
	}
	fps := make([]uint64, 0, len(want))
	next := 0 // want[next] is the first wanted fingerprint not yet reached
	// A fingerprint's postings wait in group, their values in vals, until
	// the next fingerprint says whether they are kept: most are not (a
	// fingerprint of one document in no pair), and their names are then
	// never made into strings.
	var group []Doc
	var ends []int
	var vals []byte
	add := func(fp uint64, ds []Doc) {
		fps, docs = append(fps, fp), append(docs, ds)
	}
	reach := func(fp uint64) { // every wanted fingerprint below fp has no postings
		for ; next < len(want) && want[next] < fp; next++ {
			add(want[next], nil)
		}
	}
	keep := func() {
		if len(group) == 0 {
			return
		}
		fp := group[0].Fingerprint
		reach(fp)
		wanted := next < len(want) && want[next] == fp
		if wanted {
			next++
		}
		if wanted || len(group) > 1 {
			all, start := string(vals), 0
			for i := range group {
				group[i].Name, start = all[start:ends[i]], ends[i]
			}
			add(fp, slices.Clone(group))
		}
		group, ends, vals = group[:0], ends[:0], vals[:0]
	}
	err := store.Scan(st.snap, format.SpacePrefix(format.SpacePostings), func(key, val []byte) error {
		fp, id, err := format.ParsePostingKey(key)
		if err != nil {
			return err
		}
		if len(group) > 0 && group[0].Fingerprint != fp {
			keep()
		}
		if !v.hidden(id) {
			group = append(group, Doc{ID: id, Fingerprint: fp})
			vals = append(vals, val...)
			ends = append(ends, len(vals))
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	keep()
	reach(^uint64(0))
	if next < len(want) { // the largest fingerprint, wanted and with no postings
		add(want[next], nil)
	}
	return fps, docs, nil
}

// memDocsByFP groups documents by fingerprint.
func memDocsByFP(docs []Doc) map[uint64][]Doc {
	out := map[uint64][]Doc{}
	for _, d := range docs {
		out[d.Fingerprint] = append(out[d.Fingerprint], d)
	}
	return out
}

// tablePairs returns the pairs of distinct flushed fingerprints that f
// finds, table by table: each table is read once, in order, its blocks
// merged with their pending lists.
func (db *DB) tablePairs(ctx context.Context, st *state, f *join.Finder) ([][]join.Pair, error) {
	return tasks.Parallel(ctx, len(db.design.Tables), func(t int) ([]join.Pair, error) {
		var out []join.Pair
		s := f.NewScan(t, func(p join.Pair) bool { out = append(out, p); return true })
		var buf []uint64
		ti := &st.tables[t]
		err := st.blocks.Walk(t, func(j int, last uint64, v []byte) error {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var err error
			if buf, err = table.DecodeValue(buf[:0], v, ti.Codes(), t, last); err != nil {
				return err
			}
			fps, err := table.WithPending(st.snap, t, last, ti.Pending(j), buf)
			if err != nil {
				return err
			}
			s.Feed(fps)
			return nil
		})
		s.Close()
		return out, err
	})
}
