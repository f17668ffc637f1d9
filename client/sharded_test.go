package client_test

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"math/bits"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/client"
	"github.com/simhashdb/simhashdb/engine"
	simhashdbv1 "github.com/simhashdb/simhashdb/gen/simhashdb/v1"
	"github.com/simhashdb/simhashdb/gen/simhashdb/v1/simhashdbv1connect"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/server"
	"github.com/simhashdb/simhashdb/sketch"
	"github.com/simhashdb/simhashdb/textindex"
	"github.com/simhashdb/simhashdb/vfs"
)

// shardedData is varied documents: uniform, clustered around a few
// centres, neighbours planted at every distance 0 to 3, heavy duplicates,
// fingerprint 0 and all-ones.
func shardedData(n int) []engine.Doc {
	rng := rand.New(rand.NewPCG(52, 3))
	centres := []uint64{0, ^uint64(0), rng.Uint64(), rng.Uint64()}
	var ds []engine.Doc
	for i := range n {
		var fp uint64
		switch i % 5 {
		case 0:
			fp = rng.Uint64()
		case 1, 2:
			fp = centres[rng.IntN(len(centres))]
			for range rng.IntN(4) {
				fp ^= 1 << rng.IntN(64)
			}
		case 3:
			fp = centres[i%len(centres)] // duplicates
		case 4:
			fp = ds[rng.IntN(len(ds))].Fingerprint ^ 1<<rng.IntN(64)
		}
		ds = append(ds, engine.Doc{ID: uint64(i)*7919 + 1, Fingerprint: fp})
	}
	return ds
}

func startShards(t *testing.T, n int) []string {
	return startShardsWith(t, n, 0)
}

// startShardsWith starts n servers of indexes that keep sketches of
// sketchSize bytes.
func startShardsWith(t *testing.T, n, sketchSize int) []string {
	var urls []string
	for range n {
		d, err := permutation.Blocks(3, 4)
		require.NoError(t, err)
		db, err := engine.Open(t.TempDir(), engine.Options{Design: d, Sync: engine.SyncNone, SketchSize: sketchSize})
		require.NoError(t, err)
		ts := httptest.NewServer(server.New(db, server.Options{}))
		t.Cleanup(func() { ts.Close(); db.Close() })
		urls = append(urls, ts.URL)
	}
	return urls
}

// shardedIndex is what TestSharded asks of an index over shards.
type shardedIndex interface {
	api.Index
	Meta(ctx context.Context, name string) ([]byte, error)
	SetMeta(ctx context.Context, name string, value []byte) error
}

// TestSharded: every answer over three shards equals a brute-force
// oracle over all the documents, asked through Sharded and through a
// router in front of the shards (one client.Client).
func TestSharded(t *testing.T) {
	for _, via := range []string{"client", "router"} {
		t.Run(via, func(t *testing.T) {
			urls := startShards(t, 3)
			sh, err := client.NewSharded(urls, client.Options{BatchLines: 97})
			require.NoError(t, err)
			var s shardedIndex = sh
			if via == "router" {
				s = startRouter(t, sh, "")
			}
			checkSharded(t, s, urls)
		})
	}
	_, err := client.NewSharded(nil, client.Options{})
	require.Error(t, err)
	_, err = client.NewSharded([]string{"http://a:7700,http://b:7700", "http://B:7700/"}, client.Options{})
	require.ErrorContains(t, err, "client: B:7700 is in shard 0 and shard 1")
}

// startRouter serves sh's Service as a router (server.NewRouter) that
// requires token if there is one, and returns a client of it.
func startRouter(t *testing.T, sh *client.Sharded, token string) *client.Client {
	ts := httptest.NewServer(server.NewRouter(sh.Service(), server.Options{Token: token}))
	t.Cleanup(ts.Close)
	c, err := client.New(ts.URL, client.Options{BatchLines: 97, Token: token})
	require.NoError(t, err)
	return c
}

func checkSharded(t *testing.T, s shardedIndex, urls []string) {
	ctx := context.Background()
	docs := shardedData(1500)
	require.NoError(t, s.InsertBatch(ctx, docs))
	for i, u := range urls { // every shard holds a part: pairs cross shards
		c, err := client.New(u, client.Options{})
		require.NoError(t, err)
		st, err := c.Stats(ctx)
		require.NoError(t, err)
		assert.Greater(t, st.Documents, int64(300), "shard %d", i)
	}
	gone := []uint64{docs[3].ID, docs[4].ID, docs[10].ID}
	require.NoError(t, s.Delete(ctx, gone...))
	docs = slices.DeleteFunc(docs, func(d engine.Doc) bool { return slices.Contains(gone, d.ID) })
	_, err := s.Get(ctx, gone[0])
	require.ErrorIs(t, err, engine.ErrNotFound)
	got, err := s.Get(ctx, docs[7].ID)
	require.NoError(t, err)
	assert.Equal(t, docs[7], got)

	const k = 3
	oracle := func(fp uint64) []engine.Match {
		var out []engine.Match
		for _, d := range docs {
			if dist := bits.OnesCount64(d.Fingerprint ^ fp); dist <= k {
				out = append(out, engine.Match{Doc: d, Distance: dist})
			}
		}
		slices.SortFunc(out, func(a, b engine.Match) int { return cmp.Or(a.Distance-b.Distance, cmp.Compare(a.ID, b.ID)) })
		return out
	}
	var queries []uint64
	for i := range 200 {
		queries = append(queries, docs[i*7%len(docs)].Fingerprint^uint64(i%3))
	}
	queries = append(queries, 0, ^uint64(0))
	for _, q := range queries[:40] {
		ms, err := s.Query(ctx, q, k)
		require.NoError(t, err)
		require.Equal(t, oracle(q), ms, "query %#x", q)
		// The fingerprints alone: a fingerprint of documents in several
		// shards once.
		var want []engine.Near
		for _, m := range oracle(q) {
			if n := (engine.Near{Fingerprint: m.Fingerprint, Distance: m.Distance}); !slices.Contains(want, n) {
				want = append(want, n)
			}
		}
		slices.SortFunc(want, func(a, b engine.Near) int {
			return cmp.Or(a.Distance-b.Distance, cmp.Compare(a.Fingerprint, b.Fingerprint))
		})
		sentinel := engine.Near{Fingerprint: 7, Distance: 99}
		ns, err := s.QueryFingerprints(ctx, []engine.Near{sentinel}, q, k)
		require.NoError(t, err)
		require.Equal(t, append([]engine.Near{sentinel}, want...), ns, "fingerprints %#x", q)
	}
	n := 0
	for r, err := range s.QueryBatch(ctx, queries, k) {
		require.NoError(t, err)
		require.Equal(t, n, r.Index)
		require.Equal(t, oracle(queries[n]), r.Matches, "batch query %d", n)
		n++
	}
	require.Equal(t, len(queries), n)

	var all []engine.Doc
	for d, err := range s.Docs(ctx) {
		require.NoError(t, err)
		all = append(all, d)
	}
	want := slices.Clone(docs)
	slices.SortFunc(want, func(a, b engine.Doc) int { return cmp.Compare(a.ID, b.ID) })
	require.Equal(t, want, all)

	type pair struct{ a, b uint64 }
	wantPairs := map[pair]int{}
	for i, a := range docs {
		for _, b := range docs[i+1:] {
			if dist := bits.OnesCount64(a.Fingerprint ^ b.Fingerprint); dist <= k {
				wantPairs[pair{min(a.ID, b.ID), max(a.ID, b.ID)}] = dist
			}
		}
	}
	gotPairs := map[pair]int{}
	for p, err := range s.FindAll(ctx, k) {
		require.NoError(t, err)
		require.Less(t, p.A.ID, p.B.ID)
		_, dup := gotPairs[pair{p.A.ID, p.B.ID}]
		require.False(t, dup, "pair %d %d twice", p.A.ID, p.B.ID)
		gotPairs[pair{p.A.ID, p.B.ID}] = p.Distance
	}
	require.Equal(t, wantPairs, gotPairs)

	// Clusters: the oracle's connected components of the pairs.
	parent := map[uint64]uint64{}
	var find func(uint64) uint64
	find = func(x uint64) uint64 {
		if parent[x] == x {
			return x
		}
		parent[x] = find(parent[x])
		return parent[x]
	}
	for p := range wantPairs {
		for _, id := range []uint64{p.a, p.b} {
			if _, ok := parent[id]; !ok {
				parent[id] = id
			}
		}
		parent[find(p.a)] = find(p.b)
	}
	comps := map[uint64][]uint64{}
	for id := range parent {
		comps[find(id)] = append(comps[find(id)], id)
	}
	var wantClusters [][]uint64
	for _, c := range comps {
		slices.Sort(c)
		wantClusters = append(wantClusters, c)
	}
	slices.SortFunc(wantClusters, func(a, b []uint64) int { return cmp.Compare(a[0], b[0]) })
	var gotClusters [][]uint64
	for c, err := range s.Clusters(ctx, k) {
		require.NoError(t, err)
		var ids []uint64
		for _, d := range c {
			ids = append(ids, d.ID)
		}
		gotClusters = append(gotClusters, ids)
	}
	require.Equal(t, wantClusters, gotClusters)
	require.Greater(t, len(wantClusters), 3)

	// Stars: the engine's, over one index of every document (its stars
	// are tested against a brute-force oracle in the engine).
	one := oneIndex(t, docs, 0)
	wantStars := collectGroups(t, one.Stars(ctx, k))
	require.Greater(t, len(wantStars), 3)
	require.Equal(t, wantStars, collectGroups(t, s.Stars(ctx, k)))

	st, err := s.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(len(docs)), st.Documents)
	assert.Equal(t, k, st.K)
	assert.Equal(t, k, st.ExactWithin)
	rep, err := s.Check(ctx)
	require.NoError(t, err)
	var wal int
	for _, u := range urls {
		c, err := client.New(u, client.Options{})
		require.NoError(t, err)
		r, err := c.Check(ctx)
		require.NoError(t, err)
		wal += r.WALRecords
	}
	assert.Equal(t, wal, rep.WALRecords)
	assert.Positive(t, wal)

	require.NoError(t, s.SetMeta(ctx, "colour", []byte("blue")))
	v, err := s.Meta(ctx, "colour")
	require.NoError(t, err)
	assert.Equal(t, "blue", string(v))
	c0, err := client.New(urls[0], client.Options{})
	require.NoError(t, err)
	require.NoError(t, c0.SetMeta(ctx, "shape", []byte("round")))
	_, err = s.Meta(ctx, "shape")
	require.ErrorContains(t, err, `setting "shape": shard 1 holds none, shard 0 "round"`)
	_, err = s.Meta(ctx, "size")
	require.ErrorIs(t, err, engine.ErrNotFound)

	// Servers that share no log: insert-if-new is refused before any
	// shard decides, and nothing is stored.
	fresh := engine.Doc{ID: 1 << 40, Fingerprint: 0x5555}
	_, _, err = s.InsertIfNew(ctx, fresh, 3)
	require.ErrorIs(t, err, client.ErrSharded)
	assert.ErrorContains(t, err, "holds one index: insert-if-new would decide over this server's documents alone")
	_, err = s.Get(ctx, fresh.ID)
	require.ErrorIs(t, err, engine.ErrNotFound)
}

// TestShardedVerified: the verified pairs, clusters and stars of an index
// of text over three shards equal those of one index of every document:
// of sketches alone, and of records with band keys, whose pairs across
// shards lie at any distance.
func TestShardedVerified(t *testing.T) {
	low, err := sketch.LayoutFor(0.5)
	require.NoError(t, err)
	for _, size := range []int{sketch.Size, low.RecordSize()} {
		for _, via := range []string{"client", "router"} {
			t.Run(fmt.Sprintf("%s, sketches of %d bytes", via, size), func(t *testing.T) {
				urls := startShardsWith(t, 3, size)
				sh, err := client.NewSharded(urls, client.Options{BatchLines: 97})
				require.NoError(t, err)
				var s interface {
					api.Index
					api.Verifier
				} = sh
				if via == "router" {
					s = startRouter(t, sh, "")
				}
				checkShardedVerified(t, s, size)
			})
		}
	}
}

func checkShardedVerified(t *testing.T, s interface {
	api.Index
	api.Verifier
}, size int) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(52, 4))
	docs := shardedData(1200)
	for i := range docs {
		sk := make([]byte, size)
		if i%3 == 0 || i < 10 {
			for j := range sk {
				sk[j] = byte(rng.Uint32())
			}
		} else { // like an earlier document's: similar or not
			copy(sk, docs[rng.IntN(i)].Sketch)
			for range rng.IntN(24) {
				sk[rng.IntN(len(sk))] = byte(rng.Uint32())
			}
		}
		docs[i].Sketch = string(sk)
	}
	require.NoError(t, s.InsertBatch(ctx, docs))
	one := api.Embedded{DB: oneIndex(t, docs, size)}
	const k = 3
	for _, sim := range []float64{0, 0.5, textindex.DefaultSimilarity} {
		var want, got []textindex.Pair
		for p, err := range one.Pairs(ctx, k, sim) {
			require.NoError(t, err)
			want = append(want, p)
		}
		for p, err := range s.Pairs(ctx, k, sim) {
			require.NoError(t, err)
			got = append(got, p)
		}
		byIDs := func(a, b textindex.Pair) int { return cmp.Or(cmp.Compare(a.A.ID, b.A.ID), cmp.Compare(a.B.ID, b.B.ID)) }
		slices.SortFunc(want, byIDs)
		slices.SortFunc(got, byIDs)
		require.Equal(t, len(want), len(got), "similarity %v", sim)
		for i := range want {
			require.Equal(t, want[i], got[i], "similarity %v, pair %d", sim, i)
		}
		require.NotEmpty(t, want)
		if sim == textindex.DefaultSimilarity { // FindAll's pairs, as a server's
			var plain []textindex.Pair
			for p, err := range s.FindAll(ctx, k) {
				require.NoError(t, err)
				sim, _ := textindex.Similarity(p.A.Sketch, p.B.Sketch)
				plain = append(plain, textindex.Pair{Pair: p, Similarity: sim})
			}
			slices.SortFunc(plain, byIDs)
			require.Equal(t, len(want), len(plain))
			require.True(t, slices.EqualFunc(want, plain, func(a, b textindex.Pair) bool { return a == b }))
			require.Equal(t, collectGroups(t, one.VerifiedClusters(ctx, k, sim, false)), collectGroups(t, s.Clusters(ctx, k)))
		}
		for _, star := range []bool{false, true} {
			want := collectGroups(t, one.VerifiedClusters(ctx, k, sim, star))
			require.NotEmpty(t, want)
			require.Equal(t, want, collectGroups(t, s.VerifiedClusters(ctx, k, sim, star)), "similarity %v, star %v", sim, star)
		}
	}
}

// oneIndex is an index in memory of docs.
func oneIndex(t *testing.T, docs []engine.Doc, sketchSize int) *engine.DB {
	d, err := permutation.Blocks(3, 4)
	require.NoError(t, err)
	db, err := engine.Open("/index", engine.Options{Design: d, FS: vfs.NewMem(), SketchSize: sketchSize})
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	require.NoError(t, db.InsertBatch(context.Background(), docs))
	return db
}

// collectGroups is the groups of a clusters or stars answer, as ids.
func collectGroups(t *testing.T, seq iter.Seq2[[]engine.Doc, error]) [][]uint64 {
	var out [][]uint64
	for g, err := range seq {
		require.NoError(t, err)
		ids := make([]uint64, len(g))
		for i, d := range g {
			ids[i] = d.ID
		}
		out = append(out, ids)
	}
	return out
}

// shardlessServer answers InsertIfNew as a server that knows nothing of
// shards would: its own decision, no count of shards.
type shardlessServer struct {
	simhashdbv1connect.UnimplementedIndexServiceHandler
}

func (shardlessServer) InsertIfNew(context.Context, *connect.Request[simhashdbv1.InsertIfNewRequest]) (*connect.Response[simhashdbv1.InsertIfNewResponse], error) {
	return connect.NewResponse(&simhashdbv1.InsertIfNewResponse{Inserted: true}), nil
}

// TestShardedInsertIfNewUnsharded: a shard's server whose answer does not
// say the decision covered every shard (a build before shards, which
// ignores the request's count) is reported, not taken as the index's
// decision.
func TestShardedInsertIfNewUnsharded(t *testing.T) {
	var shards []string
	for range 2 {
		mux := http.NewServeMux()
		mux.Handle(simhashdbv1connect.NewIndexServiceHandler(shardlessServer{}))
		ts := httptest.NewServer(mux)
		t.Cleanup(ts.Close)
		shards = append(shards, ts.URL)
	}
	s, err := client.NewSharded(shards, client.Options{})
	require.NoError(t, err)
	for _, ix := range []api.Index{s, startRouter(t, s, "")} {
		_, _, err = ix.InsertIfNew(context.Background(), engine.Doc{ID: 7, Fingerprint: 1}, 3)
		require.ErrorIs(t, err, client.ErrSharded)
		assert.ErrorContains(t, err, "over its own documents (inserted: true), not over the 2 shards")
	}
}
