package replica_test

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/natstest"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/replica"
)

// openDB opens an index in dir (k = 3).
func openDB(t *testing.T, dir string) *engine.DB {
	t.Helper()
	d, err := permutation.Blocks(3, 4)
	require.NoError(t, err)
	db, err := engine.Open(dir, engine.Options{Design: d, Sync: engine.SyncNone})
	require.NoError(t, err)
	return db
}

// startNode opens an index in dir and makes it a node of the stream at url.
func startNode(t *testing.T, url, dir string) *replica.Node {
	t.Helper()
	db := openDB(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), natstest.Eventually)
	defer cancel()
	n, err := replica.Start(ctx, db, replica.Options{URL: url, Stream: "test"})
	require.NoError(t, err)
	t.Cleanup(func() {
		n.Close()
		db.Close()
	})
	return n
}

// docs returns every document of n's index after it caught up with the stream.
func docs(t *testing.T, n *replica.Node) map[uint64]engine.Doc {
	t.Helper()
	ctx := context.Background()
	require.NoError(t, n.Latest(ctx))
	out := map[uint64]engine.Doc{}
	for d, err := range n.DB().Docs(ctx) {
		require.NoError(t, err)
		out[d.ID] = d
	}
	return out
}

func TestNodesAgree(t *testing.T) {
	servers := natstest.Start(t, 1)
	a := startNode(t, servers[0].URL, t.TempDir())
	b := startNode(t, servers[0].URL, t.TempDir())
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(1, 2))
	oracle := map[uint64]engine.Doc{}
	defer func() {
		na, ta := a.Publishes()
		nb, tb := b.Publishes()
		assert.Equal(t, uint64(100), na, "the writes a published")
		assert.Equal(t, uint64(100), nb)
		assert.Positive(t, ta)
		assert.Positive(t, tb)
	}()
	for i := range 200 {
		n := []*replica.Node{a, b}[i%2]
		var c engine.Commit
		for range 1 + rng.IntN(5) {
			d := engine.Doc{ID: rng.Uint64N(300), Fingerprint: rng.Uint64(), Name: fmt.Sprint("doc ", i)}
			c.Insert = append(c.Insert, d)
		}
		if i%7 == 0 {
			c.Delete = []uint64{rng.Uint64N(300)}
		}
		require.NoError(t, n.Write(ctx, c))
		for _, d := range c.Insert {
			oracle[d.ID] = d
		}
		for _, id := range c.Delete {
			delete(oracle, id)
		}
		// The writer reads its own write at once.
		for _, d := range c.Insert {
			if !slices.Contains(c.Delete, d.ID) {
				got, err := n.DB().Get(ctx, d.ID)
				require.NoError(t, err)
				assert.Equal(t, oracle[d.ID], got)
			}
		}
	}
	assert.Equal(t, oracle, docs(t, a))
	assert.Equal(t, oracle, docs(t, b))
	assert.Equal(t, a.DB().Applied(), b.DB().Applied())
}

// TestInsertIfNewAcrossNodes races crawlers on three nodes offering
// near-duplicates of a few originals: for each original exactly one is
// inserted, whichever node it went through, and every node holds the same.
func TestInsertIfNewAcrossNodes(t *testing.T) {
	servers := natstest.Start(t, 1)
	nodes := []*replica.Node{
		startNode(t, servers[0].URL, t.TempDir()),
		startNode(t, servers[0].URL, t.TempDir()),
		startNode(t, servers[0].URL, t.TempDir()),
	}
	const groups, offers = 20, 12
	rng := rand.New(rand.NewPCG(3, 4))
	originals := make([]uint64, groups)
	for g := range originals {
		originals[g] = rng.Uint64()
	}
	type offer struct {
		d        engine.Doc
		inserted bool
		matches  []engine.Match
	}
	results := make([]offer, groups*offers)
	var wg sync.WaitGroup
	for i := range results {
		g := i % groups
		fp := originals[g] ^ uint64(1)<<(i%64) // within 1 of the original, within 2 of each other
		results[i].d = engine.Doc{ID: uint64(i + 1), Fingerprint: fp}
		wg.Add(1)
		go func() {
			defer wg.Done()
			ms, ok, err := nodes[i%3].InsertIfNew(context.Background(), results[i].d, 3)
			assert.NoError(t, err)
			results[i].inserted, results[i].matches = ok, ms
		}()
	}
	wg.Wait()
	inserted := map[int][]uint64{}
	for i, r := range results {
		if r.inserted {
			inserted[i%groups] = append(inserted[i%groups], r.d.ID)
		} else {
			require.NotEmpty(t, r.matches, "offer %d refused without a reason", r.d.ID)
			for _, m := range r.matches {
				assert.LessOrEqual(t, bits.OnesCount64(m.Fingerprint^r.d.Fingerprint), 3)
			}
		}
	}
	require.Len(t, inserted, groups)
	want := map[uint64]engine.Doc{}
	for g, ids := range inserted {
		require.Len(t, ids, 1, "group %d: %d near-duplicates inserted", g, len(ids))
		want[ids[0]] = results[ids[0]-1].d
	}
	for _, n := range nodes {
		assert.Equal(t, want, docs(t, n))
	}
}

// TestNodeResumes stops a node, writes through another, and starts it
// again: it applies what it missed, once.
func TestNodeResumes(t *testing.T) {
	servers := natstest.Start(t, 1)
	ctx := context.Background()
	a := startNode(t, servers[0].URL, t.TempDir())
	dir := t.TempDir()
	db := openDB(t, dir)
	b, err := replica.Start(ctx, db, replica.Options{URL: servers[0].URL, Stream: "test"})
	require.NoError(t, err)
	require.NoError(t, b.Write(ctx, engine.Commit{Insert: []engine.Doc{{ID: 1, Fingerprint: 1}}}))
	require.NoError(t, b.Close())
	require.NoError(t, db.Close())
	for i := range 50 {
		require.NoError(t, a.Write(ctx, engine.Commit{Insert: []engine.Doc{{ID: uint64(i + 2), Fingerprint: uint64(i)}}}))
	}
	b = startNode(t, servers[0].URL, dir)
	got := docs(t, b)
	assert.Len(t, got, 51)
	assert.Equal(t, docs(t, a), got)
	assert.Equal(t, uint64(51), b.DB().Applied())
}

// TestRefusedCommands: a command the index refuses is refused by every
// node alike, with the reason, and the stream moves on.
func TestRefusedCommands(t *testing.T) {
	servers := natstest.Start(t, 1)
	ctx := context.Background()
	a := startNode(t, servers[0].URL, t.TempDir())
	b := startNode(t, servers[0].URL, t.TempDir())
	for _, tc := range []struct {
		name string
		do   func() error
		want error
	}{
		{"NUL in a name", func() error {
			return a.Write(ctx, engine.Commit{Insert: []engine.Doc{{ID: 1, Name: "a\x00b"}}})
		}, engine.ErrInput},
		{"k above the index's", func() error {
			_, _, err := a.InsertIfNew(ctx, engine.Doc{ID: 2}, 9)
			return err
		}, engine.ErrDistance},
		{"a sketch in an index without", func() error {
			_, _, err := a.InsertIfNewSimilar(ctx, engine.Doc{ID: 3, Sketch: "abcd"}, 3, 0.5)
			return err
		}, engine.ErrInput},
		{"a position of its own", func() error {
			return a.Write(ctx, engine.Commit{Insert: []engine.Doc{{ID: 4}}, Position: 7})
		}, engine.ErrInput},
		{"too large for a message", func() error {
			ids := make([]uint64, 1<<17) // 10 bytes each: past NATS's default 1 MiB
			for i := range ids {
				ids[i] = math.MaxUint64 - uint64(i)
			}
			return a.Write(ctx, engine.Commit{Insert: []engine.Doc{{ID: 5}}, Delete: ids})
		}, replica.ErrTooLarge},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.do()
			assert.ErrorIs(t, err, tc.want)
			assert.True(t, errors.Is(err, engine.ErrInput) || errors.Is(err, engine.ErrDistance), "a 400, not a 500: %v", err)
		})
	}
	require.NoError(t, a.Write(ctx, engine.Commit{Insert: []engine.Doc{{ID: 10, Fingerprint: 10}}}))
	want := map[uint64]engine.Doc{10: {ID: 10, Fingerprint: 10}}
	assert.Equal(t, want, docs(t, a))
	assert.Equal(t, want, docs(t, b))
	assert.Equal(t, uint64(4), b.DB().Applied(), "three refused commands and one write")
}

// TestSettings: a setting kept through one node is kept by every node,
// and another value for it is refused by every node alike.
func TestSettings(t *testing.T) {
	servers := natstest.Start(t, 1)
	ctx := context.Background()
	a := startNode(t, servers[0].URL, t.TempDir())
	b := startNode(t, servers[0].URL, t.TempDir())
	require.NoError(t, a.SetSetting(ctx, "app.x", []byte("1")))
	require.NoError(t, b.Latest(ctx))
	v, err := b.DB().Meta(ctx, "app.x")
	require.NoError(t, err)
	assert.Equal(t, "1", string(v))
	require.NoError(t, b.SetSetting(ctx, "app.x", []byte("1")), "the same value again")
	assert.ErrorIs(t, b.SetSetting(ctx, "app.x", []byte("2")), engine.ErrInput)
	assert.ErrorIs(t, a.SetSetting(ctx, "", []byte("2")), engine.ErrInput)
	require.NoError(t, a.Latest(ctx))
	v, err = a.DB().Meta(ctx, "app.x")
	require.NoError(t, err)
	assert.Equal(t, "1", string(v))
	assert.Equal(t, uint64(4), a.DB().Applied())
}

// TestStartRefuses: a stream name NATS does not take, or servers without
// JetStream, fail Start at once, naming the problem.
func TestStartRefuses(t *testing.T) {
	servers := natstest.Start(t, 1)
	db := openDB(t, t.TempDir())
	defer db.Close()
	start := time.Now()
	_, err := replica.Start(context.Background(), db, replica.Options{URL: servers[0].URL, Stream: "bad name"})
	require.ErrorContains(t, err, `stream "bad name"`)
	assert.Less(t, time.Since(start), natstest.Eventually/4, "refused at once, not retried")
	_, err = replica.Start(context.Background(), db, replica.Options{URL: "nats://127.0.0.1:1"})
	require.ErrorContains(t, err, "connecting to nats://127.0.0.1:1")
}

// TestStreamUnreachable: with its stream's server gone, a node's writes
// and latest reads fail as unavailable (the server's 503: try again), and
// work again once the server is back.
func TestStreamUnreachable(t *testing.T) {
	servers := natstest.Start(t, 1)
	a := startNode(t, servers[0].URL, t.TempDir())
	ctx := context.Background()
	require.NoError(t, a.Write(ctx, engine.Commit{Insert: []engine.Doc{{ID: 1, Fingerprint: 1}}}))
	servers[0].Kill()
	short, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	assert.ErrorIs(t, a.Write(short, engine.Commit{Insert: []engine.Doc{{ID: 2, Fingerprint: 2}}}), api.ErrUnavailable)
	assert.ErrorIs(t, a.Latest(short), api.ErrUnavailable)
	servers[0].Restart(t)
	require.Eventually(t, func() bool {
		try, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		return a.Write(try, engine.Commit{Insert: []engine.Doc{{ID: 3, Fingerprint: 3}}}) == nil
	}, natstest.Eventually, 50*time.Millisecond)
	got := docs(t, a)
	assert.Contains(t, got, uint64(1))
	assert.Contains(t, got, uint64(3))
}

// TestKeepFor: a stream a node creates keeps commands for Options.KeepFor;
// a node that applied them goes on, and a new node finds them gone and
// stops, naming them, rather than start from a part of the index.
func TestKeepFor(t *testing.T) {
	servers := natstest.Start(t, 1)
	ctx := context.Background()
	db := openDB(t, t.TempDir())
	defer db.Close()
	a, err := replica.Start(ctx, db, replica.Options{URL: servers[0].URL, Stream: "keep", KeepFor: time.Second})
	require.NoError(t, err)
	defer a.Close()
	for i := range 20 {
		require.NoError(t, a.Write(ctx, engine.Commit{Insert: []engine.Doc{{ID: uint64(i + 1), Fingerprint: uint64(i)}}}))
	}
	nc, err := nats.Connect(servers[0].URL)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	s, err := js.Stream(ctx, "keep")
	require.NoError(t, err)
	assert.Equal(t, time.Second, s.CachedInfo().Config.MaxAge)
	require.Eventually(t, func() bool {
		info, err := s.Info(ctx)
		return err == nil && info.State.Msgs == 0
	}, natstest.Eventually, 50*time.Millisecond, "the commands expire")

	require.NoError(t, a.Write(ctx, engine.Commit{Insert: []engine.Doc{{ID: 21, Fingerprint: 21}}}))
	assert.Len(t, docs(t, a), 21, "the node that applied them goes on")
	other := openDB(t, t.TempDir())
	defer other.Close()
	b, err := replica.Start(ctx, other, replica.Options{URL: servers[0].URL, Stream: "keep"})
	require.NoError(t, err)
	defer b.Close()
	err = b.Latest(ctx)
	require.ErrorContains(t, err, "stream keep holds no commands 1 to 20")
	n := 0
	for _, err := range other.Docs(ctx) {
		require.NoError(t, err)
		n++
	}
	assert.Zero(t, n, "nothing applied from a part of the stream")
}
