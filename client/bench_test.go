package client_test

import (
	"context"
	"iter"
	"net/http/httptest"
	"testing"

	"github.com/simhashdb/simhashdb/client"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/simhashdb/simhashdb/server"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/stretchr/testify/require"
)

// BenchmarkInsertBatch stores 1M documents with short names a loop, into
// a new index each time: over the client (the RPC on loopback, to a
// server in this process) and, the baseline in the same run, with the
// engine's InsertBatch in process, in commits of as many documents as the
// client's requests (one commit of 1M takes the engine longer).
func BenchmarkInsertBatch(b *testing.B) {
	all := docs(1_000_000, 3)
	for _, over := range []string{"client", "in-process"} {
		b.Run(over, func(b *testing.B) {
			for b.Loop() {
				b.StopTimer()
				db, err := engine.Open(b.TempDir(), engine.Options{Sync: engine.SyncNone})
				require.NoError(b, err)
				ts := httptest.NewServer(server.New(db, server.Options{Fingerprinter: simhash.Default()}))
				c, err := client.New(ts.URL, client.Options{})
				require.NoError(b, err)
				b.StartTimer()
				if over == "client" {
					err = c.InsertBatch(ctx, all)
				} else {
					for i := 0; i < len(all) && err == nil; i += client.DefaultBatchLines {
						err = db.InsertBatch(ctx, all[i:min(i+client.DefaultBatchLines, len(all))])
					}
				}
				require.NoError(b, err)
				b.StopTimer()
				ts.Close()
				require.NoError(b, db.Close())
				b.StartTimer()
			}
			b.ReportMetric(float64(len(all))*float64(b.N)/b.Elapsed().Seconds(), "docs/s")
		})
	}
}

// BenchmarkQueryBatch answers 1M queries (half one bit from a stored
// fingerprint, half uniform) against 1M stored uniform ones a loop: over
// the client (the RPC's QueryBatch on loopback) and, the baseline in the
// same run, with the engine's QueryBatch in process.
func BenchmarkQueryBatch(b *testing.B) {
	const n = 1_000_000
	fps := fingerprints.Uniform(2*n, 4) // half stored, half asked beside one bit from a stored one
	all := make([]engine.Doc, n)
	for i := range all {
		all[i] = engine.Doc{ID: uint64(i), Fingerprint: fps[i]}
	}
	db, err := engine.Open(b.TempDir(), engine.Options{Sync: engine.SyncNone})
	require.NoError(b, err)
	defer db.Close()
	require.NoError(b, db.Load(ctx, engine.DocsOf(all)))
	ts := httptest.NewServer(server.New(db, server.Options{Fingerprinter: simhash.Default()}))
	defer ts.Close()
	c, err := client.New(ts.URL, client.Options{})
	require.NoError(b, err)
	qs := fps[n:]
	for i := 0; i < n; i += 2 {
		qs[i] = fps[i] ^ 1<<(i%64)
	}
	for _, over := range []string{"client", "in-process"} {
		b.Run(over, func(b *testing.B) {
			for b.Loop() {
				seq := db.QueryBatch(ctx, qs, 3)
				if over == "client" {
					seq = c.QueryBatch(ctx, qs, 3)
				}
				for _, err := range seq {
					if err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "queries/s")
		})
	}
}

// BenchmarkRouter is one query, one insert and a batch of 1,000 queries
// over two shards of 100K documents each: through a router
// (server.NewRouter of Sharded.Service, a client of it) and, the baseline
// in the same run, through Sharded in this process (the client places
// documents and merges answers itself). Everything on loopback.
func BenchmarkRouter(b *testing.B) {
	const n = 200_000
	fps := fingerprints.Uniform(2*n, 5)
	var urls []string
	for range 2 {
		db, err := engine.Open(b.TempDir(), engine.Options{Sync: engine.SyncNone})
		require.NoError(b, err)
		defer db.Close()
		ts := httptest.NewServer(server.New(db, server.Options{}))
		defer ts.Close()
		urls = append(urls, ts.URL)
	}
	sh, err := client.NewSharded(urls, client.Options{})
	require.NoError(b, err)
	all := make([]engine.Doc, n)
	for i := range all {
		all[i] = engine.Doc{ID: uint64(i), Fingerprint: fps[i]}
	}
	require.NoError(b, sh.InsertBatch(ctx, all))
	rt := httptest.NewServer(server.NewRouter(sh.Service(), server.Options{}))
	defer rt.Close()
	routed, err := client.New(rt.URL, client.Options{})
	require.NoError(b, err)
	qs := fps[n:]
	for i := 0; i < len(qs); i += 2 {
		qs[i] = fps[i] ^ 1<<(i%64)
	}
	for _, via := range []string{"router", "sharded"} {
		var ix interface {
			Query(ctx context.Context, fp uint64, k int) ([]engine.Match, error)
			Insert(ctx context.Context, d engine.Doc) error
			QueryBatch(ctx context.Context, queries []uint64, k int) iter.Seq2[engine.BatchResult, error]
		} = sh
		if via == "router" {
			ix = routed
		}
		b.Run("query/"+via, func(b *testing.B) {
			i := 0
			for b.Loop() {
				if _, err := ix.Query(ctx, qs[i%len(qs)], 3); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run("insert/"+via, func(b *testing.B) {
			i := 0
			for b.Loop() {
				if err := ix.Insert(ctx, engine.Doc{ID: uint64(n + i), Fingerprint: qs[i%len(qs)]}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
		b.Run("batch-1000/"+via, func(b *testing.B) {
			i := 0
			for b.Loop() {
				from := (i * 1000) % (len(qs) - 1000)
				for _, err := range ix.QueryBatch(ctx, qs[from:from+1000], 3) {
					if err != nil {
						b.Fatal(err)
					}
				}
				i++
			}
		})
	}
}
