package textindex

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/sketch"
)

// benchDocs is the size of the benchmarks' indexes:
// SIMHASHDB_BENCH_DOCS, or 2^17.
func benchDocs() int {
	if n, err := strconv.Atoi(os.Getenv("SIMHASHDB_BENCH_DOCS")); err == nil && n > 0 {
		return n
	}
	return 1 << 17
}

// benchIndex is an index of the benchmarks, built once a run.
type benchIndex struct {
	dir     string
	db      *engine.DB
	k       int
	queries []engine.Doc
}

var (
	benchMu      sync.Mutex
	benchIndexes = map[string]*benchIndex{}
)

// indexFor returns the index of kind "k3" (fingerprints only, built for
// k = 3), "text" (a text index's: sketches, tables of
// permutation.ForCandidates) or "text-exact6" (sketches, tables that find
// every fingerprint within K: permutation.ForIndex's, text indexes' before
// ForCandidates), of the same fingerprints (planted neighbours at every
// distance 0..6) and names, bulk loaded.
func indexFor(b *testing.B, kind string) *benchIndex { return indexWith(b, kind, 0) }

// indexWith is indexFor with a cache of cacheSize bytes (0: the default).
func indexWith(b *testing.B, kind string, cacheSize int64) *benchIndex {
	benchMu.Lock()
	defer benchMu.Unlock()
	key := fmt.Sprint(kind, cacheSize)
	if ix := benchIndexes[key]; ix != nil {
		return ix
	}
	n := benchDocs()
	fps := fingerprints.Planted(n, K, 0.05, 1)
	r := rand.New(rand.NewPCG(2, 3))
	docs := make([]engine.Doc, n)
	sketches := kind != "k3"
	for i, fp := range fps {
		docs[i] = engine.Doc{ID: uint64(i + 1), Fingerprint: fp, Name: fmt.Sprintf("/data/site/section-%d/page-%d.html", i%97, i)}
		if sketches {
			var s sketch.Sketch
			for j := range s {
				s[j] = byte(r.Uint32())
			}
			docs[i].Sketch = string(s[:])
		}
	}
	opts := engine.Options{K: 3, SizeHint: int64(n), Sync: engine.SyncNone, CacheSize: cacheSize}
	if sketches {
		opts = Options(engine.Options{SizeHint: int64(n), Sync: engine.SyncNone, CacheSize: cacheSize})
	}
	if kind == "text-exact6" {
		d, err := permutation.ForIndex(K, n)
		if err != nil {
			b.Fatal(err)
		}
		opts.Design = d
	}
	dir, err := os.MkdirTemp("", "textindex-bench")
	if err != nil {
		b.Fatal(err)
	}
	db, err := engine.Open(dir, opts)
	if err != nil {
		b.Fatal(err)
	}
	if err := db.Load(ctx, engine.DocsOf(docs)); err != nil {
		b.Fatal(err)
	}
	qfps := fingerprints.Queries(fps, 4096, 5)
	// The documents are not kept: the heap a collection scans would weigh
	// on the index whose benchmark runs with more of them alive.
	ix := &benchIndex{dir: dir, db: db, k: db.K(), queries: make([]engine.Doc, len(qfps))}
	for i, q := range qfps {
		ix.queries[i] = engine.Doc{Fingerprint: q, Sketch: docs[i%n].Sketch}
	}
	benchIndexes[key] = ix
	return ix
}

// TestMain removes the benchmarks' indexes, which outlive any one
// benchmark (hundreds of MB each at a million documents).
func TestMain(m *testing.M) {
	code := m.Run()
	for _, ix := range benchIndexes {
		ix.db.Close()
		os.RemoveAll(ix.dir)
	}
	os.Exit(code)
}

// kinds are the indexes each benchmark compares.
var kinds = []string{"k3", "text", "text-exact6"}

// BenchmarkQuery is one warm query: today's k = 3 query of an index of
// fingerprints, and a text index's query within K verified by the
// sketches. Both over the same fingerprints; the query mix is
// fingerprints.Queries'. block-reads/op is the cache misses a query makes
// (0 when warm).
func BenchmarkQuery(b *testing.B) {
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			ix := indexFor(b, kind)
			var dst []engine.Match
			for _, q := range ix.queries { // warm
				dst, _ = ix.db.QueryAppend(ctx, dst[:0], q.Fingerprint, ix.k)
			}
			runQueries(b, ix, kind)
		})
	}
}

// BenchmarkColdQuery is a query whose blocks are not cached (a cache of 1
// MiB, the least, before indexes of hundreds of MiB): block-reads/op is the
// cache misses a query makes, each a block read from Pebble.
func BenchmarkColdQuery(b *testing.B) {
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			runQueries(b, indexWith(b, kind, 1<<20), kind)
		})
	}
}

// runQueries times ix's queries, verified in a text index, and reports
// the cache misses a query makes and the median and 99th percentile of
// their times (each taken with the clock, which adds tens of ns).
func runQueries(b *testing.B, ix *benchIndex, kind string) {
	before, err := ix.db.Stats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	var dst []engine.Match
	var took []time.Duration
	i := 0
	for b.Loop() {
		q := ix.queries[i%len(ix.queries)]
		i++
		start := time.Now()
		if dst, err = ix.db.QueryAppend(ctx, dst[:0], q.Fingerprint, ix.k); err != nil {
			b.Fatal(err)
		}
		if kind != "k3" {
			Verify(dst, q.Sketch, DefaultSimilarity)
		}
		took = append(took, time.Since(start))
	}
	after, err := ix.db.Stats(ctx)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(after.CacheMisses-before.CacheMisses)/float64(b.N), "block-reads/op")
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(took[len(took)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkFindAll is every pair of the index: today's FindAll at k = 3,
// and Pairs within K verified. cpu-ms/op is the process's CPU time,
// pairs the pairs each reports, candidates the pairs within K the
// tables propose, which the sketches then decide.
func BenchmarkFindAll(b *testing.B) {
	for _, kind := range kinds {
		b.Run(kind, func(b *testing.B) {
			ix := indexFor(b, kind)
			// The sketches are random, so few candidates verify: the cost
			// is the candidates', counted once outside the clock.
			candidates := 0
			for _, err := range ix.db.FindAll(ctx, ix.k) {
				if err != nil {
					b.Fatal(err)
				}
				candidates++
			}
			var cpu time.Duration
			n := 0
			for b.Loop() {
				before := cpuTime()
				n = 0
				if kind != "k3" {
					for _, err := range Pairs(ctx, ix.db, ix.k, DefaultSimilarity) {
						if err != nil {
							b.Fatal(err)
						}
						n++
					}
				} else {
					for _, err := range ix.db.FindAll(ctx, ix.k) {
						if err != nil {
							b.Fatal(err)
						}
						n++
					}
				}
				cpu += cpuTime() - before
			}
			b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
			b.ReportMetric(float64(n), "pairs")
			b.ReportMetric(float64(candidates), "candidates")
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkRead is a document's reading: the fingerprint alone (an index
// without sketches) and the fingerprint with its sketch, in MB/s of text.
func BenchmarkRead(b *testing.B) {
	r := rand.New(rand.NewPCG(4, 5))
	var text []byte
	for len(text) < 64<<10 {
		text = fmt.Appendf(text, "word%d ", r.IntN(5000))
	}
	f, err := simhash.New(simhash.Options{Pipeline: simhash.LatestPipeline, Shingle: Shingle})
	if err != nil {
		b.Fatal(err)
	}
	for _, sketched := range []bool{false, true} {
		b.Run(map[bool]string{false: "fingerprint", true: "fingerprint+sketch"}[sketched], func(b *testing.B) {
			rd, err := NewReader(f, simhash.ReadText, map[bool]int{false: 0, true: Options(engine.Options{}).SketchSize}[sketched])
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				if _, _, err := rd.Read(bytes.NewReader(text)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
