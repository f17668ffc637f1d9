package client_test

import (
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
