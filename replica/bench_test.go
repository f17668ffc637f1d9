package replica_test

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/natstest"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/replica"
)

// BenchmarkWrite is one writer's Node.Write, one document a commit,
// beside the stream's own round in the same run (a JetStream publish
// acknowledged, 100 bytes; and with a consumer of the stream on the same
// connection, as a node has), on one NATS server and on three (the
// stream on all three), and beside the engine's Insert with SyncAlways
// alone.
func BenchmarkWrite(b *testing.B) {
	ctx := context.Background()
	d, err := permutation.Blocks(3, 4)
	require.NoError(b, err)
	b.Run("engine-sync-always", func(b *testing.B) {
		db, err := engine.Open(b.TempDir(), engine.Options{Design: d, Sync: engine.SyncAlways})
		require.NoError(b, err)
		defer db.Close()
		rng := rand.New(rand.NewPCG(1, 1))
		for i := 0; b.Loop(); i++ {
			require.NoError(b, db.Insert(ctx, engine.Doc{ID: uint64(i), Fingerprint: rng.Uint64()}))
		}
	})
	for _, servers := range []int{1, 3} {
		ns := natstest.Start(b, servers)
		url := natstest.URLs(ns)
		db, err := engine.Open(b.TempDir(), engine.Options{Design: d, Sync: engine.SyncNone})
		require.NoError(b, err)
		defer db.Close()
		sctx, cancel := context.WithTimeout(ctx, natstest.Eventually)
		n, err := replica.Start(sctx, db, replica.Options{URL: url, Stream: "bench", Replicas: servers})
		cancel()
		require.NoError(b, err)
		defer n.Close()
		nc, err := nats.Connect(url)
		require.NoError(b, err)
		defer nc.Close()
		js, err := jetstream.New(nc)
		require.NoError(b, err)
		_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "raw", Subjects: []string{"raw"}, Replicas: servers})
		require.NoError(b, err)
		b.Run(fmt.Sprintf("R%d/publish", servers), func(b *testing.B) {
			msg := make([]byte, 100)
			for b.Loop() {
				_, err := js.Publish(ctx, "raw", msg)
				require.NoError(b, err)
			}
		})
		// The round with a consumer of the stream on the same connection,
		// as a node's publishes have: the servers deliver each command
		// to it as well as acknowledge it.
		_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: "consumed", Subjects: []string{"consumed"}, Replicas: servers})
		require.NoError(b, err)
		cons, err := js.OrderedConsumer(ctx, "consumed", jetstream.OrderedConsumerConfig{})
		require.NoError(b, err)
		it, err := cons.Messages()
		require.NoError(b, err)
		defer it.Stop()
		go func() {
			for {
				if _, err := it.Next(); err != nil {
					return
				}
			}
		}()
		b.Run(fmt.Sprintf("R%d/publish-consumed", servers), func(b *testing.B) {
			msg := make([]byte, 100)
			for b.Loop() {
				_, err := js.Publish(ctx, "consumed", msg)
				require.NoError(b, err)
			}
		})
		b.Run(fmt.Sprintf("R%d/node-write", servers), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(2, 2))
			for i := 0; b.Loop(); i++ {
				require.NoError(b, n.Write(ctx, engine.Commit{Insert: []engine.Doc{{ID: uint64(i), Fingerprint: rng.Uint64()}}}))
			}
		})
	}
}

// BenchmarkCatchUp is a new node applying a stream of 20,000 commands
// (one document each) that other nodes wrote: the rate a node catches up
// at after a restart or from a snapshot.
func BenchmarkCatchUp(b *testing.B) {
	ctx := context.Background()
	d, err := permutation.Blocks(3, 4)
	require.NoError(b, err)
	ns := natstest.Start(b, 1)
	db, err := engine.Open(b.TempDir(), engine.Options{Design: d, Sync: engine.SyncNone})
	require.NoError(b, err)
	writer, err := replica.Start(ctx, db, replica.Options{URL: ns[0].URL, Stream: "catchup"})
	require.NoError(b, err)
	const n = 20_000
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range n {
		require.NoError(b, writer.Write(ctx, engine.Commit{Insert: []engine.Doc{{ID: uint64(i), Fingerprint: rng.Uint64()}}}))
	}
	writer.Close()
	db.Close()
	b.ResetTimer()
	for b.Loop() {
		b.StopTimer()
		db, err := engine.Open(b.TempDir(), engine.Options{Design: d, Sync: engine.SyncNone})
		require.NoError(b, err)
		b.StartTimer()
		node, err := replica.Start(ctx, db, replica.Options{URL: ns[0].URL, Stream: "catchup"})
		require.NoError(b, err)
		require.NoError(b, node.Latest(ctx))
		b.StopTimer()
		require.Equal(b, uint64(n), db.Applied())
		node.Close()
		db.Close()
		b.StartTimer()
	}
	b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "commands/s")
}

// BenchmarkInsertIfNew is one crawler's Node.InsertIfNew, fresh
// fingerprints, on a stream of three NATS servers: through a node of one
// index, and through a node of shard 0 of 2 and of 3 sharing the stream
// (one node a shard), whose decision waits for the other shards' votes.
// Its ids are shard 0's, so every offer goes through the same node.
// warnings prints what nodes log of warnings and errors, so that a
// benchmark's slow decisions can be told apart (a consumer started
// again, a vote waited for).
var warnings = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))

func BenchmarkInsertIfNew(b *testing.B) {
	ctx := context.Background()
	ns := natstest.Start(b, 3)
	url := natstest.URLs(ns)
	runs := 0
	for _, shards := range []int{1, 2, 3} {
		b.Run(fmt.Sprintf("shards-%d", shards), func(b *testing.B) {
			d, err := permutation.Blocks(3, 4)
			require.NoError(b, err)
			var nodes []*replica.Node
			runs++
			stream := fmt.Sprintf("ifnew-%d-%d", shards, runs) // a stream a run
			for s := range shards {
				db, err := engine.Open(b.TempDir(), engine.Options{Design: d, Sync: engine.SyncNone})
				require.NoError(b, err)
				defer db.Close()
				sctx, cancel := context.WithTimeout(ctx, natstest.Eventually)
				n, err := replica.Start(sctx, db, replica.Options{URL: url, Stream: stream, Replicas: 3, Shard: s, Shards: shards, Logger: warnings})
				cancel()
				require.NoError(b, err)
				defer n.Close()
				nodes = append(nodes, n)
			}
			rng := rand.New(rand.NewPCG(1, 1))
			id := uint64(0)
			offer := func() {
				for id++; shards > 1 && api.ShardOf(id, shards) != 0; id++ {
				}
				_, ok, err := nodes[0].InsertIfNew(ctx, engine.Doc{ID: id, Fingerprint: rng.Uint64()}, 3)
				require.NoError(b, err)
				require.True(b, ok)
			}
			// One decision before the clock: a node's first read of a
			// stream just made may wait for the stream's leader.
			offer()
			var slowest time.Duration
			for b.Loop() {
				start := time.Now()
				offer()
				slowest = max(slowest, time.Since(start))
			}
			b.ReportMetric(float64(slowest.Microseconds())/1000, "max-ms")
		})
	}
}
