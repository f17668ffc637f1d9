package replica

import (
	"context"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/natstest"
	"github.com/simhashdb/simhashdb/permutation"
)

// TestGroupsApplyInOrder: many writers at once on three nodes, on a few
// ids, inserting and deleting, so that nodes apply commands in groups
// that must not merge an insert after a delete of its id: every node ends
// with what the stream's commands give one at a time, in its order.
func TestGroupsApplyInOrder(t *testing.T) {
	servers := natstest.Start(t, 1)
	ctx := context.Background()
	d, err := permutation.Blocks(3, 4)
	require.NoError(t, err)
	var nodes []*Node
	for range 3 {
		db, err := engine.Open(t.TempDir(), engine.Options{Design: d, Sync: engine.SyncNone})
		require.NoError(t, err)
		n, err := Start(ctx, db, Options{URL: servers[0].URL, Stream: "groups"})
		require.NoError(t, err)
		t.Cleanup(func() { n.Close(); db.Close() })
		nodes = append(nodes, n)
	}
	var wg sync.WaitGroup
	for w := range 12 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := rand.New(rand.NewPCG(uint64(w), 5))
			for i := range 150 {
				var c engine.Commit
				for range 1 + rng.IntN(3) {
					c.Insert = append(c.Insert, engine.Doc{ID: rng.Uint64N(40), Fingerprint: rng.Uint64(), Name: fmt.Sprint(w, "-", i)})
				}
				if rng.IntN(2) == 0 {
					c.Delete = []uint64{rng.Uint64N(40)}
				}
				assert.NoError(t, nodes[(w+i)%3].Write(ctx, c))
			}
		}()
	}
	wg.Wait()

	// The oracle: the stream's commands, one at a time, in its order.
	nc, err := nats.Connect(servers[0].URL)
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	cons, err := js.OrderedConsumer(ctx, "groups", jetstream.OrderedConsumerConfig{})
	require.NoError(t, err)
	want := map[uint64]engine.Doc{}
	for range 12 * 150 {
		msg, err := cons.Next()
		require.NoError(t, err)
		c, err := decodeCommand(msg.Data())
		require.NoError(t, err)
		for _, d := range c.commit.Insert {
			want[d.ID] = d
		}
		for _, id := range c.commit.Delete {
			delete(want, id)
		}
	}
	grouped := 0
	for i, n := range nodes {
		require.NoError(t, n.Latest(ctx))
		got := map[uint64]engine.Doc{}
		for d, err := range n.DB().Docs(ctx) {
			require.NoError(t, err)
			got[d.ID] = d
		}
		assert.Equal(t, want, got, "node %d", i)
		grouped += int(n.grouped.Load())
	}
	t.Logf("%d commands applied in groups of more than one", grouped)
	assert.Positive(t, grouped, "no group formed: the test does not test groups")
}
