package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simhashdb/simhashdb/engine/internal/units"
	"github.com/simhashdb/simhashdb/engine/internal/uring"
	"github.com/simhashdb/simhashdb/internal/directio"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var ctx = context.Background()

// oracle is the brute-force model of an index.
type oracle map[uint64]Doc

func (o oracle) query(q uint64, k int) []Match {
	var out []Match
	for _, d := range o {
		if dist := bits.OnesCount64(d.Fingerprint ^ q); dist <= k {
			out = append(out, Match{d, dist})
		}
	}
	slices.SortFunc(out, func(a, b Match) int {
		if a.Distance != b.Distance {
			return a.Distance - b.Distance
		}
		return cmpU64(a.ID, b.ID)
	})
	return out
}

func testOptions() Options {
	return Options{SizeHint: 1 << 12, MemtableSize: 64 << 10, Sync: SyncNone}
}

func openT(t *testing.T, dir string, o Options) *DB {
	t.Helper()
	db, err := Open(dir, o)
	require.NoError(t, err)
	return db
}

// queries returns query fingerprints: stored ones, neighbours of stored ones
// at every distance 0..k+1, random ones, 0 and all-ones.
// oracleOf is the oracle of docs stored in order: a repeated id keeps its
// last document.
func oracleOf(docs []Doc) oracle {
	o := oracle{}
	for _, d := range docs {
		o[d.ID] = d
	}
	return o
}

func queries(o oracle, k, n int, r *rand.Rand) []uint64 {
	qs := []uint64{0, ^uint64(0), 1, 1 << 63}
	ids := slices.Sorted(func(yield func(uint64) bool) {
		for id := range o {
			if !yield(id) {
				return
			}
		}
	})
	for i := 0; i < n && len(ids) > 0; i++ {
		fp := o[ids[r.IntN(len(ids))]].Fingerprint
		qs = append(qs, fingerprints.Flip(fp, i%(k+2), r), r.Uint64())
	}
	return qs
}

func checkQueries(t *testing.T, db *DB, o oracle, qs []uint64, stage string) {
	t.Helper()
	for k := 0; k <= db.K(); k++ {
		for _, q := range qs {
			got, err := db.Query(ctx, q, k)
			require.NoError(t, err)
			want := findable(db, q, o.query(q, k))
			if !assert.Equal(t, len(want), len(got), "%s: query %016x k=%d", stage, q, k) {
				return
			}
			if len(want) > 0 {
				require.Equal(t, want, got, "%s: query %016x k=%d", stage, q, k)
			}
			// QueryAppend keeps what dst held and appends the same.
			sentinel := Match{Doc{ID: 1<<64 - 1}, 99}
			app, err := db.QueryAppend(ctx, []Match{sentinel}, q, k)
			require.NoError(t, err)
			require.Equal(t, append([]Match{sentinel}, want...), app, "%s: QueryAppend %016x k=%d", stage, q, k)
			// QueryFingerprints: the distinct fingerprints of the same.
			nsent := Near{1<<64 - 1, 99}
			nears, err := db.QueryFingerprints(ctx, []Near{nsent}, q, k)
			require.NoError(t, err)
			require.Equal(t, append([]Near{nsent}, nearOf(want)...), nears, "%s: QueryFingerprints %016x k=%d", stage, q, k)
		}
		n := 0
		for r, err := range db.QueryBatch(ctx, qs, k) {
			require.NoError(t, err)
			require.Equal(t, n, r.Index)
			require.Equal(t, qs[n], r.Query)
			want := findable(db, qs[n], o.query(qs[n], k))
			require.Equal(t, len(want), len(r.Matches), "%s: batch query %016x k=%d", stage, qs[n], k)
			if len(want) > 0 {
				require.Equal(t, want, r.Matches, "%s: batch query %016x k=%d", stage, qs[n], k)
			}
			n++
		}
		require.Equal(t, len(qs), n, "%s: QueryBatch answers every query", stage)
	}
	checkPairs(t, db, o, stage)
	checkDocs(t, db, o, stage)
}

// nearOf returns the distinct fingerprints of ms, nearest first, then
// ascending.
func nearOf(ms []Match) []Near {
	var out []Near
	for _, m := range ms {
		out = append(out, Near{m.Fingerprint, m.Distance})
	}
	slices.SortFunc(out, func(a, b Near) int { // the oracle's own order, not CompareNear
		if a.Distance != b.Distance {
			return a.Distance - b.Distance
		}
		return cmpU64(a.Fingerprint, b.Fingerprint)
	})
	return slices.Compact(out)
}

// findable returns the matches of q that db's tables find: all of them
// within the design's ExactWithin; beyond it, those whose difference from
// q leaves some table's prefix clean.
func findable(db *DB, q uint64, ms []Match) []Match {
	return slices.DeleteFunc(ms, func(m Match) bool { return !findableAt(db, m.Fingerprint^q) })
}

// findableAt reports whether db's tables find a fingerprint at difference
// x from a query.
func findableAt(db *DB, x uint64) bool {
	d := db.Design()
	return bits.OnesCount64(x) <= d.ExactWithin() || d.Covers(x)
}

// checkDocs compares Docs with the oracle: every document, by id.
func checkDocs(t *testing.T, db *DB, o oracle, stage string) {
	t.Helper()
	var got []Doc
	for d, err := range db.Docs(ctx) {
		require.NoError(t, err)
		got = append(got, d)
	}
	want := slices.SortedFunc(maps.Values(o), func(a, b Doc) int { return cmpU64(a.ID, b.ID) })
	require.Equal(t, len(want), len(got), "%s: Docs", stage)
	require.Equal(t, want, got, "%s: Docs", stage)
}

// pairs is the oracle's FindAll: every pair of documents within k.
func (o oracle) pairs(k int) []Pair {
	docs := slices.SortedFunc(func(yield func(Doc) bool) {
		for _, d := range o {
			if !yield(d) {
				return
			}
		}
	}, func(a, b Doc) int { return cmpU64(a.ID, b.ID) })
	var out []Pair
	for i, a := range docs {
		for _, b := range docs[i+1:] {
			if d := bits.OnesCount64(a.Fingerprint ^ b.Fingerprint); d <= k {
				out = append(out, Pair{a, b, d})
			}
		}
	}
	return out
}

// checkPairs compares FindAll and Clusters with the oracle at every k.
func checkPairs(t *testing.T, db *DB, o oracle, stage string) {
	t.Helper()
	for k := 0; k <= db.K(); k++ {
		var got []Pair
		for p, err := range db.FindAll(ctx, k) {
			require.NoError(t, err)
			got = append(got, p)
		}
		want := slices.DeleteFunc(o.pairs(k), func(p Pair) bool {
			return !findableAt(db, p.A.Fingerprint^p.B.Fingerprint)
		})
		slices.SortFunc(got, func(a, b Pair) int { return cmp.Or(cmp.Compare(a.A.ID, b.A.ID), cmp.Compare(a.B.ID, b.B.ID)) })
		require.Equal(t, len(want), len(got), "%s: FindAll k=%d", stage, k)
		require.Equal(t, want, got, "%s: FindAll k=%d", stage, k)
		var gotC [][]Doc
		for c, err := range db.Clusters(ctx, k) {
			require.NoError(t, err)
			gotC = append(gotC, c)
		}
		require.Equal(t, oracleClusters(want), gotC, "%s: Clusters k=%d", stage, k)
	}
}

// corpus is varied data: uniform, clustered, planted neighbours at every
// distance 0..3, many ids on one fingerprint, 0 and all-ones.
func corpus(n int, seed uint64) []Doc {
	var fps []uint64
	fps = append(fps, fingerprints.Uniform(n/3, seed)...)
	fps = append(fps, fingerprints.Clustered(n/3, seed)...)
	fps = append(fps, fingerprints.Planted(n/3, 3, 0.3, seed)...)
	for range 20 {
		fps = append(fps, 0, ^uint64(0), 0xdeadbeef)
	}
	docs := make([]Doc, len(fps))
	for i, fp := range fps {
		docs[i] = Doc{ID: uint64(i)*7 + 1, Fingerprint: fp}
		if i%4 != 0 { // some without a name
			docs[i].Name = fmt.Sprintf("doc-%d", i)
		}
	}
	return docs
}

func TestExactAgainstOracle(t *testing.T) {
	t.Parallel()
	designs := map[string]func() *permutation.Design{
		"optimised": func() *permutation.Design { return nil },
		"blocks-5":  func() *permutation.Design { d, _ := permutation.Blocks(3, 5); return d },
		"paper-4":   func() *permutation.Design { d, _ := permutation.Paper(4); return d },
	}
	for name, mk := range designs {
		t.Run(name, func(t *testing.T) { exactAgainstOracle(t, mk(), 0) })
	}
}

// TestCandidatesAgainstOracle checks a design that finds every neighbour
// within 5 bits and most at 6 (a text index's): asked for 6, queries,
// batches, all pairs and clusters give exactly the oracle's fingerprints
// within 5 and those at 6 whose difference leaves a table's prefix clean,
// through the memtable, flushes, deletes and a reopen.
func TestCandidatesAgainstOracle(t *testing.T) {
	t.Parallel()
	d, err := permutation.ForCandidates(6, 1<<20)
	require.NoError(t, err)
	require.Equal(t, 5, d.ExactWithin())
	r := rand.New(rand.NewPCG(8, 8))
	dir := t.TempDir()
	o := testOptions()
	o.K, o.Design = 6, d
	db := openT(t, dir, o)
	st, err := db.Stats(ctx)
	require.NoError(t, err)
	require.Equal(t, []int{6, 5}, []int{st.K, st.ExactWithin}, "stats say how far the tables are exact")
	var fps []uint64
	fps = append(fps, fingerprints.Planted(900, 6, 0.5, 3)...)
	fps = append(fps, fingerprints.Clustered(300, 3)...)
	for range 10 {
		fps = append(fps, 0, ^uint64(0))
	}
	docs := make([]Doc, len(fps))
	for i, fp := range fps {
		docs[i] = Doc{ID: uint64(i) + 1, Fingerprint: fp, Name: fmt.Sprint("doc-", i)}
	}
	model := oracle{}
	half := len(docs) / 2
	require.NoError(t, db.InsertBatch(ctx, docs[:half]))
	for _, d := range docs[:half] {
		model[d.ID] = d
	}
	qs := queries(model, 6, 60, r)
	// Some queries at 6 bits must be missed, or this checks nothing
	// beyond exactness.
	missed := 0
	for _, q := range qs {
		missed += len(model.query(q, 6)) - len(findable(db, q, model.query(q, 6)))
	}
	require.Positive(t, missed)
	checkQueries(t, db, model, qs, "memtable")
	require.NoError(t, db.Flush(ctx))
	checkQueries(t, db, model, qs, "flushed")
	for i, d := range docs[half:] {
		require.NoError(t, db.Insert(ctx, d))
		model[d.ID] = d
		if i%10 == 0 {
			require.NoError(t, db.Delete(ctx, docs[i].ID))
			delete(model, docs[i].ID)
		}
	}
	qs = queries(model, 6, 60, r)
	checkQueries(t, db, model, qs, "mixed")
	require.NoError(t, db.Close())
	db = openT(t, dir, Options{Sync: SyncNone})
	defer db.Close()
	assert.Equal(t, 5, db.Design().ExactWithin(), "the design's exact distance is kept")
	checkQueries(t, db, model, qs, "reopened")
	require.NoError(t, db.Flush(ctx))
	checkQueries(t, db, model, qs, "flushed again")
}

// TestUnits runs the oracle test with cached units of postings that hold
// at most 1, 8 or the default count: most units are then big (look-ups
// seek in Pebble), some, or none.
func TestUnits(t *testing.T) {
	t.Parallel()
	for _, max := range []int{1, 8, units.DefaultMax} {
		t.Run(fmt.Sprint(max), func(t *testing.T) {
			exactAgainstOracle(t, nil, max)
		})
	}
}

// exactAgainstOracle checks queries, batches, all pairs and clusters
// against the oracle through inserts, flushes, deletes, replacements and a
// reopen, on the given design (nil: the optimiser's), with cached units of
// at most unitMax postings (0: the default).
func exactAgainstOracle(t *testing.T, design *permutation.Design, unitMax int) {
	r := rand.New(rand.NewPCG(7, 7))
	dir := t.TempDir()
	o := testOptions()
	o.Design, o.knobs.unitMax = design, unitMax
	db := openT(t, dir, o)
	docs := corpus(3000, 1)
	model := oracle{}
	// First half: in the memtable only.
	half := len(docs) / 2
	require.NoError(t, db.InsertBatch(ctx, docs[:half]))
	for _, d := range docs[:half] {
		model[d.ID] = d
	}
	checkQueries(t, db, model, queries(model, 3, 100, r), "memtable")
	require.NoError(t, db.Flush(ctx))
	checkQueries(t, db, model, queries(model, 3, 100, r), "flushed")
	// Second half one by one (background flushes happen), with
	// replacements and deletes of flushed and unflushed documents.
	for i, d := range docs[half:] {
		require.NoError(t, db.Insert(ctx, d))
		model[d.ID] = d
		if i%10 == 0 {
			victim := docs[r.IntN(half+i+1)]
			require.NoError(t, db.Delete(ctx, victim.ID))
			delete(model, victim.ID)
		}
		if i%13 == 0 {
			re := docs[r.IntN(half+i+1)]
			re.Fingerprint = fingerprints.Flip(re.Fingerprint, 1+r.IntN(3), r)
			re.Name += "-v2"
			require.NoError(t, db.Insert(ctx, re))
			model[re.ID] = re
		}
	}
	qs := queries(model, 3, 150, r)
	checkQueries(t, db, model, qs, "mixed")
	require.NoError(t, db.Flush(ctx))
	checkQueries(t, db, model, qs, "flushed again")
	_, err := db.Check(ctx)
	require.NoError(t, err)
	st, err := db.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(len(model)), st.Documents)
	distinct := map[uint64]bool{}
	for _, d := range model {
		distinct[d.Fingerprint] = true
	}
	assert.Equal(t, int64(len(distinct)), st.Fingerprints)
	// Unflushed writes survive a reopen through the log.
	require.NoError(t, db.Delete(ctx, docs[0].ID, docs[1].ID))
	delete(model, docs[0].ID)
	delete(model, docs[1].ID)
	require.NoError(t, db.Close())
	db = openT(t, dir, Options{Sync: SyncNone, knobs: o.knobs})
	checkQueries(t, db, model, qs, "reopened")
	for _, d := range docs[:50] {
		got, err := db.Get(ctx, d.ID)
		if want, ok := model[d.ID]; ok {
			require.NoError(t, err)
			assert.Equal(t, want, got)
		} else {
			assert.ErrorIs(t, err, ErrNotFound)
		}
	}
	require.NoError(t, db.Flush(ctx))
	_, err = db.Check(ctx)
	require.NoError(t, err)
	// Read-only, with a small cache: the blocks whose files the store maps
	// are read without Pebble (store.Snapshot.GetMany), those that flushes
	// wrote again, in files that overlap, through it.
	require.NoError(t, db.Delete(ctx, docs[2].ID)) // and one in the log only
	delete(model, docs[2].ID)
	require.NoError(t, db.Close())
	db = openT(t, dir, Options{ReadOnly: true, CacheSize: 1 << 20, knobs: o.knobs})
	defer db.Close()
	checkQueries(t, db, model, qs, "read-only")
}

// oracleClusters groups the pairs' documents into connected components,
// by id: each cluster by id, the clusters by their smallest id. A search
// of its own, not package join's, which is under test.
func oracleClusters(pairs []Pair) [][]Doc {
	docs := map[uint64]Doc{}
	next := map[uint64][]uint64{}
	for _, p := range pairs {
		docs[p.A.ID], docs[p.B.ID] = p.A, p.B
		next[p.A.ID] = append(next[p.A.ID], p.B.ID)
		next[p.B.ID] = append(next[p.B.ID], p.A.ID)
	}
	seen := map[uint64]bool{}
	var out [][]Doc
	for _, id := range slices.Sorted(maps.Keys(docs)) {
		if seen[id] {
			continue
		}
		seen[id] = true
		var c []Doc
		for todo := []uint64{id}; len(todo) > 0; {
			x := todo[len(todo)-1]
			todo = todo[:len(todo)-1]
			c = append(c, docs[x])
			for _, y := range next[x] {
				if !seen[y] {
					seen[y] = true
					todo = append(todo, y)
				}
			}
		}
		slices.SortFunc(c, func(a, b Doc) int { return cmpU64(a.ID, b.ID) })
		out = append(out, c)
	}
	return out
}

// setRaw writes key = value into db's Pebble store as the engine writes
// there, durably: tests that damage or age stored data use it.
func setRaw(t *testing.T, db *DB, key, value []byte) {
	t.Helper()
	b := db.store.NewBatch()
	defer b.Close()
	require.NoError(t, b.Set(key, value))
	require.NoError(t, db.store.Commit(ctx, db.store.BatchWrites(b)))
}

// TestReadRing checks that an index read through the io_uring ring (where
// the kernel allows one), buffered and with ReadsDirect, answers as the
// oracle does, cold (its files' pages dropped from the page cache where
// the system can), and as the same index read with pread.
func TestReadRing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := corpus(20000, 11)
	model := oracleOf(docs)
	r := rand.New(rand.NewPCG(11, 11))
	qs := queries(model, 3, 300, r)
	o := testOptions()
	o.CacheSize = 1 << 20 // most blocks read from the files
	db := openT(t, dir, o)
	require.NoError(t, db.Load(ctx, DocsOf(docs)))
	require.NoError(t, db.Close())
	ring, err := uring.New(4)
	if err == nil {
		require.NoError(t, ring.Close())
	}
	for _, mode := range []ReadMode{ReadsBuffered, ReadsDirect, ReadsBlocking} {
		o.Reads = mode
		if err := directio.DropTree(dir); !errors.Is(err, errors.ErrUnsupported) {
			require.NoError(t, err)
		}
		db := openT(t, dir, o)
		if ring != nil && mode != ReadsBlocking {
			require.NotNil(t, db.ring, "the kernel allows io_uring: reads go through a ring")
		} else {
			require.Nil(t, db.ring)
		}
		st0, err := db.Stats(ctx)
		require.NoError(t, err)
		checkQueries(t, db, model, qs, "cold, reads "+mode.String())
		st, err := db.Stats(ctx)
		require.NoError(t, err)
		switch {
		case db.ring == nil:
			assert.Zero(t, st.ReadSubmits+int64(st.ReadSubmitTime)+int64(st.ReadWaitTime), "no ring, no ring's times")
		case st.FileReadRounds > st0.FileReadRounds:
			// Reads went to the disk through the ring (where the system
			// cannot drop the files' pages, none may).
			assert.Greater(t, st.ReadSubmits, st0.ReadSubmits, "the ring's submissions, reads "+mode.String())
			assert.Greater(t, st.ReadSubmitTime, st0.ReadSubmitTime, "the time in them, reads "+mode.String())
		}
		_, err = db.Check(ctx)
		require.NoError(t, err)
		require.NoError(t, db.Close())
		if mode == ReadsBlocking {
			continue
		}
		// Read-only, the table blocks come through the store's map of its
		// files, many in one submission.
		ro := o
		ro.ReadOnly = true
		db = openT(t, dir, ro)
		checkQueries(t, db, model, qs, "read-only, reads "+mode.String())
		if ring != nil {
			assert.Positive(t, db.store.MappedReads(), "blocks read through the store's map")
		}
		require.NoError(t, db.Close())
	}
}

// TestQueryFingerprintsNewDocuments: on a writable index whose memtables
// hold only documents numbered above every flushed one (new ones, deleted
// or written again among themselves), QueryFingerprints answers from the
// tables and the memtables, and as the oracle does; once a write in memory
// deletes or replaces a flushed document, it answers from the documents,
// still as the oracle does, until a flush.
func TestQueryFingerprintsNewDocuments(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(12, 12))
	o := testOptions()
	o.MemtableSize = 8 << 20 // the new documents stay in memory
	db := openT(t, t.TempDir(), o)
	t.Cleanup(func() { db.Close() })
	docs := corpus(3000, 12)
	require.NoError(t, db.InsertBatch(ctx, docs))
	require.NoError(t, db.Flush(ctx))
	model := oracleOf(docs)
	shown := func() bool {
		t.Helper()
		require.NoError(t, db.rlockOpen())
		defer db.mu.RUnlock()
		v := db.lockedView()
		ok, err := v.flushedShown()
		require.NoError(t, err)
		return ok
	}
	var left []uint64 // fingerprints that documents in memory left
	check := func(stage string) {
		t.Helper()
		for _, q := range append(queries(model, 3, 150, r), left...) {
			for k := 0; k <= 3; k++ {
				got, err := db.QueryFingerprints(ctx, nil, q, k)
				require.NoError(t, err)
				require.Equal(t, nearOf(model.query(q, k)), got, "%s: query %016x k=%d", stage, q, k)
			}
		}
	}
	// New documents: copies of stored fingerprints, near ones and others.
	for i := range 300 {
		id, err := db.NextID(ctx)
		require.NoError(t, err)
		fp := r.Uint64()
		switch i % 3 {
		case 0:
			fp = docs[r.IntN(len(docs))].Fingerprint
		case 1:
			fp = fingerprints.Flip(docs[r.IntN(len(docs))].Fingerprint, 1+r.IntN(3), r)
		}
		d := Doc{ID: id, Fingerprint: fp, Name: fmt.Sprint("new-", i)}
		require.NoError(t, db.Insert(ctx, d))
		model[id] = d
		if i%7 == 3 { // written again, or deleted: among the new ones
			left = append(left, d.Fingerprint)
			d.Fingerprint = fingerprints.Flip(d.Fingerprint, 2, r)
			require.NoError(t, db.Insert(ctx, d))
			model[id] = d
		} else if i%11 == 5 {
			left = append(left, d.Fingerprint)
			require.NoError(t, db.Delete(ctx, id))
			delete(model, id)
		}
	}
	require.True(t, shown(), "only new documents in memory")
	check("new documents")
	// A flushed document deleted, and one written again, in memory.
	gone, again := docs[10], docs[20]
	require.NoError(t, db.Delete(ctx, gone.ID))
	delete(model, gone.ID)
	again.Fingerprint = fingerprints.Flip(again.Fingerprint, 3, r)
	require.NoError(t, db.Insert(ctx, again))
	model[again.ID] = again
	require.False(t, shown(), "a flushed document written in memory")
	check("flushed documents written")
	for _, q := range []uint64{gone.Fingerprint, docs[20].Fingerprint} {
		got, err := db.QueryFingerprints(ctx, nil, q, 0)
		require.NoError(t, err)
		require.Equal(t, nearOf(model.query(q, 0)), got, "query %016x", q)
	}
	require.NoError(t, db.Flush(ctx))
	require.True(t, shown(), "flushed")
	check("flushed again")
}
