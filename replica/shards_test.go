package replica_test

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"math/bits"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/natstest"
	"github.com/simhashdb/simhashdb/replica"
)

// startShard opens an index in dir and makes it a node of shard of
// shards on the stream "shared" at url (of replicas, if it makes it);
// what it logs goes to log.
func startShard(t *testing.T, url, dir string, shard, shards, replicas int, log io.Writer) *replica.Node {
	t.Helper()
	db := openDB(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Eventually)
	defer cancel()
	n, err := replica.Start(ctx, db, replica.Options{URL: url, Stream: "shared", Shard: shard, Shards: shards, Replicas: replicas,
		Logger: slog.New(slog.NewTextHandler(log, nil))})
	require.NoError(t, err)
	t.Cleanup(func() {
		n.Close()
		db.Close()
	})
	return n
}

// TestShardsInsertIfNew races crawlers over three shards of two nodes
// each, sharing one log (on three servers): offers near-duplicate of a few originals, with
// ids that place them on every shard, go each through a node of its own
// shard, beside plain writes. For each original exactly one offer is
// inserted, whichever shard it went to; a refused offer names the stored
// near-duplicate, on whatever shard; each shard's nodes hold the same
// documents, all of their shard's, and together the oracle's; and no node
// stopped applying the log (the two nodes of a shard publish the same
// votes at once).
func TestShardsInsertIfNew(t *testing.T) {
	servers := natstest.Start(t, 3)
	const shards = 3
	nodes := make([][]*replica.Node, shards)
	var log syncBuffer
	for s := range shards {
		for range 2 {
			nodes[s] = append(nodes[s], startShard(t, natstest.URLs(servers), t.TempDir(), s, shards, 3, &log))
		}
	}
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(52, 7))
	const groups, offers = 12, 9
	originals := make([]uint64, groups)
	for g := range originals {
		originals[g] = rng.Uint64()
	}
	type offer struct {
		d        engine.Doc
		node     *replica.Node
		inserted bool
		matches  []engine.Match
	}
	results := make([]offer, groups*offers)
	for i := range results {
		g := i % groups
		id := uint64(i + 1)
		results[i].d = engine.Doc{ID: id, Fingerprint: originals[g] ^ uint64(1)<<(i%64)}
		results[i].node = nodes[api.ShardOf(id, shards)][rng.IntN(2)]
	}
	// Plain writes of far fingerprints alongside, on every shard.
	want := map[uint64]engine.Doc{}
	var plain []engine.Doc
	for i := range 60 {
		d := engine.Doc{ID: uint64(1000 + i), Fingerprint: rng.Uint64()}
		plain = append(plain, d)
		want[d.ID] = d
	}
	var wg sync.WaitGroup
	for i := range results {
		wg.Go(func() {
			r := &results[i]
			ms, ok, err := r.node.InsertIfNew(ctx, r.d, 3)
			assert.NoError(t, err)
			r.inserted, r.matches = ok, ms
		})
	}
	wg.Go(func() {
		for _, d := range plain {
			assert.NoError(t, nodes[api.ShardOf(d.ID, shards)][int(d.ID)%2].Write(ctx, engine.Commit{Insert: []engine.Doc{d}}))
		}
	})
	wg.Wait()

	inserted := map[int][]uint64{}
	across := 0 // refusals by a document of another shard
	for i, r := range results {
		if r.inserted {
			inserted[i%groups] = append(inserted[i%groups], r.d.ID)
			want[r.d.ID] = r.d
			continue
		}
		require.NotEmpty(t, r.matches, "offer %d refused without a reason", r.d.ID)
		for _, m := range r.matches {
			assert.LessOrEqual(t, bits.OnesCount64(m.Fingerprint^r.d.Fingerprint), 3)
			if api.ShardOf(m.ID, shards) != api.ShardOf(r.d.ID, shards) {
				across++
			}
		}
	}
	require.Len(t, inserted, groups)
	for g, ids := range inserted {
		require.Len(t, ids, 1, "group %d: %d near-duplicates inserted", g, len(ids))
	}
	assert.Positive(t, across, "no offer was kept out by another shard's document")

	all := map[uint64]engine.Doc{}
	for s, group := range nodes {
		first := docs(t, group[0])
		for id, d := range first {
			assert.Equal(t, s, api.ShardOf(id, shards), "document %d on shard %d", id, s)
			all[id] = d
		}
		for _, n := range group[1:] {
			assert.Equal(t, first, docs(t, n), "shard %d's nodes differ", s)
		}
	}
	assert.Equal(t, want, all)
	assert.Empty(t, log.String(), "what the nodes logged")
}

// syncBuffer is a bytes.Buffer that nodes write to at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestShardsRefuse: a node takes no other shard's ids, and a stream made
// for one layout refuses nodes of another.
func TestShardsRefuse(t *testing.T) {
	servers := natstest.Start(t, 1)
	ctx := context.Background()
	a := startShard(t, servers[0].URL, t.TempDir(), 0, 2, 1, io.Discard)
	var other uint64 = 1
	for api.ShardOf(other, 2) == 0 {
		other++
	}
	err := a.Write(ctx, engine.Commit{Insert: []engine.Doc{{ID: other, Fingerprint: 1}}})
	require.ErrorIs(t, err, engine.ErrInput)
	assert.ErrorContains(t, err, "is shard 1's of 2; this node is shard 0's")
	require.ErrorIs(t, a.Write(ctx, engine.Commit{Delete: []uint64{other}}), engine.ErrInput)
	_, _, err = a.InsertIfNew(ctx, engine.Doc{ID: other}, 3)
	require.ErrorIs(t, err, engine.ErrInput)

	for _, o := range []replica.Options{
		{Stream: "shared", Shards: 3, Shard: 0},
		{Stream: "shared"},
		{Stream: "shared", Shards: 2, Shard: 2},
	} {
		o.URL = servers[0].URL
		db := openDB(t, t.TempDir())
		_, err := replica.Start(ctx, db, o)
		assert.ErrorIs(t, err, engine.ErrInput, "%+v", o)
		require.NoError(t, db.Close())
	}
	one := startNode(t, servers[0].URL, t.TempDir()) // stream "test": one index's
	require.NotNil(t, one)
	db := openDB(t, t.TempDir())
	defer db.Close()
	_, err = replica.Start(ctx, db, replica.Options{URL: servers[0].URL, Stream: "test", Shard: 1, Shards: 2})
	assert.ErrorContains(t, err, "stream test is one index's log")
}
