package engine

import (
	"math/bits"
	"runtime"
	"testing"

	"github.com/simhashdb/simhashdb/join"
	"github.com/stretchr/testify/require"
)

func TestClustersChain(t *testing.T) {
	t.Parallel()
	d := func(id, fp uint64) Doc { return Doc{ID: id, Fingerprint: fp} }
	g := &nearGraph{
		pairs: []join.Pair{{A: 0, B: 1, Distance: 1}, {A: 1, B: 2, Distance: 2}, {A: 0, B: 2, Distance: 3}}, // a chain with a cycle
		docs: [][]Doc{
			{d(1, 10)}, {d(5, 20)}, {d(9, 30)},
			{d(7, 40), d(8, 40)}, // documents sharing a fingerprint, no other neighbour
		},
	}
	require.Equal(t, [][]Doc{{d(1, 10), d(5, 20), d(9, 30)}, {d(7, 40), d(8, 40)}}, g.clusters())
	require.Empty(t, (&nearGraph{}).clusters())
}

// TestFindAllDuplicates: thousands of documents on one fingerprint (every
// empty page has fingerprint 0) make a cluster in memory proportional to
// them, and their pairs stream: a caller that stops early stops the work,
// and reading them all allocates far less than the pairs would take.
func TestFindAllDuplicates(t *testing.T) {
	const copies = 5000
	db := openT(t, t.TempDir(), testOptions())
	defer db.Close()
	var docs []Doc
	for i := range copies {
		docs = append(docs, Doc{ID: uint64(i + 1), Fingerprint: 0})
	}
	docs = append(docs, Doc{ID: copies + 1, Fingerprint: 1}, Doc{ID: copies + 2, Fingerprint: 0xffff0000ffff})
	require.NoError(t, db.Load(ctx, DocsOf(docs)))
	// And some in the memtable, on the same fingerprint.
	require.NoError(t, db.InsertBatch(ctx, []Doc{{ID: copies + 3, Fingerprint: 0}, {ID: copies + 4, Fingerprint: 3}}))
	n := copies + 2 // documents on fingerprints 0 and 1 (at distance 1), and 3

	first := 0
	for _, err := range db.FindAll(ctx, 1) {
		require.NoError(t, err)
		if first++; first == 1 {
			break
		}
	}
	require.Equal(t, 1, first)

	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	pairs, unordered := 0, 0
	var firstErr error
	for p, err := range db.FindAll(ctx, 2) { // no testify in the loop: it allocates
		if err != nil && firstErr == nil {
			firstErr = err
		}
		if p.A.ID >= p.B.ID {
			unordered++
		}
		pairs++
	}
	runtime.ReadMemStats(&after)
	require.NoError(t, firstErr)
	require.Zero(t, unordered, "A.ID < B.ID")
	// Every two of the n documents within 2 of each other: fingerprints 0,
	// 1 and 3 are all within 2.
	require.Equal(t, (n+1)*n/2, pairs)
	require.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(pairs)*8, "pairs are streamed, not gathered (%d of them)", pairs)

	var cs [][]Doc
	for c, err := range db.Clusters(ctx, 1) {
		require.NoError(t, err)
		cs = append(cs, c)
	}
	require.Len(t, cs, 1, "fingerprints 0 and 1 and 3 are linked at distance 1")
	require.Len(t, cs[0], n+1)
}

// TestDocsDuringFlush: Docs reads the state it began with while writes and
// flushes go on; the writer does not wait for it.
func TestDocsDuringFlush(t *testing.T) {
	t.Parallel()
	db := openT(t, t.TempDir(), testOptions())
	defer db.Close()
	docs := corpus(2000, 11)
	require.NoError(t, db.Load(ctx, DocsOf(docs)))
	require.NoError(t, db.InsertBatch(ctx, []Doc{{ID: 1 << 50, Fingerprint: 7}}))
	n := 0
	for _, err := range db.Docs(ctx) {
		require.NoError(t, err)
		if n == 10 {
			require.NoError(t, db.Delete(ctx, 1<<50))
			require.NoError(t, db.Insert(ctx, Doc{ID: 1 << 51, Fingerprint: 9}))
			require.NoError(t, db.Flush(ctx))
		}
		n++
	}
	require.Equal(t, len(oracleOf(docs))+1, n, "the state Docs began with")
	n = 0
	for _, err := range db.Docs(ctx) {
		require.NoError(t, err)
		n++
	}
	require.Equal(t, len(oracleOf(docs))+1, n, "one deleted, one added")
}

// TestStars: every member of a star lies within k of its centre, every
// document with a neighbour is in exactly one star, and the centres are
// taken by id.
func TestStars(t *testing.T) {
	t.Parallel()
	db := openT(t, t.TempDir(), testOptions())
	defer db.Close()
	docs := corpus(3000, 21)
	require.NoError(t, db.Load(ctx, DocsOf(docs[:2000])))
	require.NoError(t, db.InsertBatch(ctx, docs[2000:]))
	model := oracleOf(docs)
	for k := 1; k <= 3; k++ {
		seen := map[uint64]bool{}
		lastCentre := uint64(0)
		for s, err := range db.Stars(ctx, k) {
			require.NoError(t, err)
			require.Greater(t, len(s), 1)
			require.Greater(t, s[0].ID+1, lastCentre, "centres by id")
			lastCentre = s[0].ID + 1
			for i, d := range s {
				require.False(t, seen[d.ID], "document %d in two stars", d.ID)
				seen[d.ID] = true
				require.LessOrEqual(t, bits.OnesCount64(d.Fingerprint^s[0].Fingerprint), k, "member %d of centre %d", d.ID, s[0].ID)
				if i > 1 {
					require.Less(t, s[i-1].ID, d.ID)
				}
			}
		}
		for _, p := range model.pairs(k) {
			require.True(t, seen[p.A.ID] || seen[p.B.ID], "a pair within k has a document in a star")
		}
	}
}

// TestWholeCorpusFlushed: the whole-corpus reads give the same answer, in
// the same order, whether the documents wait in memtables or a flush has
// moved them into the tables: what a flush does in the background is not
// visible in the output.
func TestWholeCorpusFlushed(t *testing.T) {
	t.Parallel()
	docs := corpus(900, 5)
	reads := map[string]func(db *DB) (any, error){
		"FindAll":  func(db *DB) (any, error) { return collect2(db.FindAll(ctx, 3)) },
		"Clusters": func(db *DB) (any, error) { return collect2(db.Clusters(ctx, 3)) },
		"Stars":    func(db *DB) (any, error) { return collect2(db.Stars(ctx, 3)) },
		"Docs":     func(db *DB) (any, error) { return collect2(db.Docs(ctx)) },
	}
	db := openT(t, t.TempDir(), testOptions())
	defer db.Close()
	require.NoError(t, db.InsertBatch(ctx, docs[:300]))
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.InsertBatch(ctx, docs[300:]))
	before := map[string]any{}
	for name, read := range reads {
		got, err := read(db)
		require.NoError(t, err)
		require.NotEmpty(t, got, name)
		before[name] = got
	}
	require.NoError(t, db.Flush(ctx))
	for name, read := range reads {
		got, err := read(db)
		require.NoError(t, err)
		require.Equal(t, before[name], got, name)
	}
}
