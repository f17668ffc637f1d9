package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/simhashdb/simhashdb/internal/natstest"
)

// BenchmarkClusterLatency compares one client's requests, one at a time,
// to a single serve (its log fsynced at every write, --sync always) and
// to a node of a replicated index (three NATS servers, the stream on all
// three: a write is acknowledged once two hold it) on the same machine,
// in the same run: writes, insert-if-new, queries, and queries that wait
// for the latest state; and the quorum's round alone (a 100-byte message
// published to a stream on the three servers and acknowledged).
func BenchmarkClusterLatency(b *testing.B) {
	single := startServeBinary(b, binary, "--db", filepath.Join(b.TempDir(), "single"), "--sync", "always")
	ns := natstest.Start(b, 3)
	node := startServeBinary(b, binary, "--db", filepath.Join(b.TempDir(), "node"), "--nats", natstest.URLs(ns),
		"--stream-replicas", "3", "--sync", "none")
	b.Run("stream/publish", func(b *testing.B) { benchPublish(b, natstest.URLs(ns)) })
	var id atomic.Uint64
	for _, s := range []struct {
		name string
		url  string
	}{{"single", single.url}, {"replica", node.url}} {
		preload(b, s.url, &id, 20_000)
		b.Run(s.name+"/put", func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 1))
			n0, t0 := publishes(b, s.url)
			for b.Loop() {
				mustDo(b, "PUT", fmt.Sprintf("%s/v1/documents/%d", s.url, id.Add(1)), fmt.Sprintf(`{"fingerprint":"%#x"}`, rng.Uint64()))
			}
			// The quorum's round as the node's writes waited for it.
			if n1, t1 := publishes(b, s.url); n1 > n0 {
				b.ReportMetric((t1-t0)/(n1-n0)*1e6, "publish-us")
			}
		})
		b.Run(s.name+"/insert-if-new", func(b *testing.B) {
			rng := rand.New(rand.NewPCG(2, 2))
			for b.Loop() {
				mustDo(b, "POST", s.url+"/v1/insert-if-new", fmt.Sprintf(`{"id":%d,"fingerprint":"%#x","k":3}`, id.Add(1), rng.Uint64()))
			}
		})
		b.Run(s.name+"/query", func(b *testing.B) {
			rng := rand.New(rand.NewPCG(3, 3))
			for b.Loop() {
				mustDo(b, "GET", fmt.Sprintf("%s/v1/query?fp=%#x&k=3", s.url, rng.Uint64()), "")
			}
		})
		if s.name == "replica" {
			b.Run(s.name+"/query-latest", func(b *testing.B) {
				rng := rand.New(rand.NewPCG(3, 3))
				for b.Loop() {
					mustDo(b, "GET", fmt.Sprintf("%s/v1/query?fp=%#x&k=3&latest=true", s.url, rng.Uint64()), "")
				}
			})
		}
	}
}

// BenchmarkClusterPaired measures the targets with the machine's drift
// taken out: each op is, one after the other and each timed, a PUT to a
// single serve (--sync always), a PUT to a node of a replicated index
// (three NATS servers, the stream on all three), a lone client's publish
// to a stream on the same servers (the quorum's round), and a query to
// the single serve and to the node. extra-rounds is the node's PUT less
// the single's, in rounds; query-ratio the node's query over the
// single's.
func BenchmarkClusterPaired(b *testing.B) {
	single := startServeBinary(b, binary, "--db", filepath.Join(b.TempDir(), "single"), "--sync", "always")
	ns := natstest.Start(b, 3)
	node := startServeBinary(b, binary, "--db", filepath.Join(b.TempDir(), "node"), "--nats", natstest.URLs(ns),
		"--stream-replicas", "3", "--sync", "none")
	var id atomic.Uint64
	preload(b, single.url, &id, 20_000)
	preload(b, node.url, &id, 20_000)
	publish := rawPublisher(b, natstest.URLs(ns))
	rng := rand.New(rand.NewPCG(1, 1))
	var t [5]time.Duration // single PUT, node PUT, round, single query, node query
	for b.Loop() {
		fp := rng.Uint64()
		steps := []func(){
			func() {
				mustDo(b, "PUT", fmt.Sprintf("%s/v1/documents/%d", single.url, id.Add(1)), fmt.Sprintf(`{"fingerprint":"%#x"}`, fp))
			},
			func() {
				mustDo(b, "PUT", fmt.Sprintf("%s/v1/documents/%d", node.url, id.Add(1)), fmt.Sprintf(`{"fingerprint":"%#x"}`, fp))
			},
			publish,
			func() { mustDo(b, "GET", fmt.Sprintf("%s/v1/query?fp=%#x&k=3", single.url, fp^1), "") },
			func() { mustDo(b, "GET", fmt.Sprintf("%s/v1/query?fp=%#x&k=3", node.url, fp^1), "") },
		}
		for i, step := range steps {
			start := time.Now()
			step()
			t[i] += time.Since(start)
		}
	}
	for i, unit := range []string{"single-put-us", "node-put-us", "round-us", "single-query-us", "node-query-us"} {
		b.ReportMetric(float64(t[i].Microseconds())/float64(b.N), unit)
	}
	b.ReportMetric(float64(t[1]-t[0])/float64(t[2]), "extra-rounds")
	b.ReportMetric(float64(t[4])/float64(t[3]), "query-ratio")
}

// BenchmarkClusterThroughput runs 32 clients at once against 1, 2 and 3
// nodes of one replicated index (three NATS servers, the stream on all
// three), each client on one node: writes and queries a second.
func BenchmarkClusterThroughput(b *testing.B) {
	ns := natstest.Start(b, 3)
	var urls []string
	for i := range 3 {
		s := startServeBinary(b, binary, "--db", filepath.Join(b.TempDir(), fmt.Sprint("node", i)), "--nats", natstest.URLs(ns),
			"--stream-replicas", "3", "--sync", "none")
		urls = append(urls, s.url)
	}
	var id atomic.Uint64
	preload(b, urls[0], &id, 20_000)
	for nodes := 1; nodes <= 3; nodes++ {
		for _, op := range []string{"put", "query"} {
			b.Run(fmt.Sprintf("nodes=%d/%s", nodes, op), func(b *testing.B) {
				var client atomic.Int64
				b.SetParallelism(16) // 32 clients on 2 cores
				b.RunParallel(func(pb *testing.PB) {
					c := client.Add(1)
					url := urls[int(c)%nodes]
					rng := rand.New(rand.NewPCG(uint64(c), 4))
					for pb.Next() {
						if op == "put" {
							mustDo(b, "PUT", fmt.Sprintf("%s/v1/documents/%d", url, id.Add(1)), fmt.Sprintf(`{"fingerprint":"%#x"}`, rng.Uint64()))
						} else {
							mustDo(b, "GET", fmt.Sprintf("%s/v1/query?fp=%#x&k=3", url, rng.Uint64()), "")
						}
					}
				})
			})
		}
	}
}

// preload stores n documents through url in batches.
func preload(b *testing.B, url string, id *atomic.Uint64, n int) {
	rng := rand.New(rand.NewPCG(9, 9))
	for done := 0; done < n; {
		var body []byte
		for range min(5000, n-done) {
			body = fmt.Appendf(body, "{\"id\":%d,\"fingerprint\":\"%#x\"}\n", id.Add(1), rng.Uint64())
			done++
		}
		mustDo(b, "POST", url+"/v1/documents", string(body))
	}
}

func mustDo(b *testing.B, method, url, body string) {
	code, out, err := clusterDo(method, url, body)
	if err != nil || code != 200 {
		b.Fatalf("%s %s: %d %s %v", method, url, code, out, err)
	}
}

// publishes reads a node's simhashdb_replica_publishes_total and
// simhashdb_replica_publish_seconds_total (zeros on a single serve).
func publishes(b *testing.B, url string) (n, seconds float64) {
	code, out, err := clusterDo("GET", url+"/metrics", "")
	if err != nil || code != 200 {
		b.Fatalf("GET %s/metrics: %d %v", url, code, err)
	}
	for _, line := range strings.Split(out, "\n") {
		name, v, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		f, err := strconv.ParseFloat(v, 64)
		switch {
		case err != nil:
		case name == "simhashdb_replica_publishes_total":
			n = f
		case name == "simhashdb_replica_publish_seconds_total":
			seconds = f
		}
	}
	return n, seconds
}

// benchPublish publishes 100-byte messages one at a time to a stream of
// its own on the servers at url, kept on three of them.
func benchPublish(b *testing.B, url string) {
	publish := rawPublisher(b, url)
	for b.Loop() {
		publish()
	}
}

// rawPublisher makes a stream "raw" on the servers at url, kept on three
// of them, and returns a publish of a 100-byte message to it that waits
// for its acknowledgement: the quorum's round.
func rawPublisher(b *testing.B, url string) func() {
	nc, err := nats.Connect(url)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "raw", Subjects: []string{"raw"}, Replicas: 3}); err != nil {
		b.Fatal(err)
	}
	msg := make([]byte, 100)
	return func() {
		if _, err := js.Publish(ctx, "raw", msg); err != nil {
			b.Fatal(err)
		}
	}
}
