package server

import (
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/simhash"
)

// BenchmarkLoad is the bounded load test on loopback: queries with 1, 8
// and 64 concurrent clients over HTTP, beside the same queries made
// in-process, then inserts both ways. It stops by itself (each case runs
// b.N operations). SIMHASHDB_LOAD_N sets the stored documents (default
// 100,000).
//
//	go test ./server -run '^$' -bench Load -benchtime 20000x
func BenchmarkLoad(b *testing.B) {
	n := 100_000
	if s := os.Getenv("SIMHASHDB_LOAD_N"); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil {
			b.Fatal(err)
		}
	}
	db, err := engine.Open(b.TempDir(), engine.Options{Sync: engine.SyncAlways, SizeHint: int64(n)})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	r := rand.New(rand.NewPCG(1, 2))
	docs := make([]engine.Doc, n)
	for i := range docs {
		docs[i] = engine.Doc{ID: uint64(i + 1), Fingerprint: r.Uint64()}
	}
	if err := db.Load(context.Background(), engine.DocsOf(docs)); err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(New(db, Options{}))
	defer ts.Close()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 128}}
	do := func(req *http.Request, err error) error {
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	query := func(i int) uint64 { return docs[(i*7919)%n].Fingerprint ^ 1<<(i%64) }
	for _, clients := range []int{1, 8, 64} {
		b.Run(fmt.Sprintf("query-http-%d", clients), func(b *testing.B) {
			run(b, clients, func(i int) error {
				return do(http.NewRequest("GET", fmt.Sprintf("%s/v1/query?fp=%s&k=3", ts.URL, simhash.Format(query(i))), nil))
			})
		})
		b.Run(fmt.Sprintf("query-inprocess-%d", clients), func(b *testing.B) {
			run(b, clients, func(i int) error {
				_, err := db.Query(context.Background(), query(i), 3)
				return err
			})
		})
	}
	next := uint64(n + 1)
	var mu sync.Mutex
	id := func() uint64 {
		mu.Lock()
		defer mu.Unlock()
		next++
		return next
	}
	for _, clients := range []int{1, 64} {
		b.Run(fmt.Sprintf("insert-http-%d", clients), func(b *testing.B) {
			run(b, clients, func(int) error {
				i := id()
				return do(http.NewRequest("PUT", fmt.Sprintf("%s/v1/documents/%d", ts.URL, i), strings.NewReader(`{"fingerprint":"`+simhash.Format(i*0x9e3779b97f4a7c15)+`"}`)))
			})
		})
		b.Run(fmt.Sprintf("insert-inprocess-%d", clients), func(b *testing.B) {
			run(b, clients, func(int) error {
				i := id()
				return db.Insert(context.Background(), engine.Doc{ID: i, Fingerprint: i * 0x9e3779b97f4a7c15})
			})
		})
	}
}

// run calls op b.N times from clients goroutines, timing each call, and
// reports operations per second and the p50 and p99 latency.
func run(b *testing.B, clients int, op func(i int) error) {
	lat := make([]time.Duration, b.N)
	var wg sync.WaitGroup
	var errOnce sync.Once
	var firstErr error
	b.ResetTimer()
	start := time.Now()
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := c; i < b.N; i += clients {
				t := time.Now()
				if err := op(i); err != nil {
					errOnce.Do(func() { firstErr = err })
					return
				}
				lat[i] = time.Since(t)
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	b.StopTimer()
	if firstErr != nil {
		b.Fatal(firstErr)
	}
	slices.Sort(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "ops/s")
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-us")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-us")
}
