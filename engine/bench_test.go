package engine

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/simhashdb/simhashdb/permutation"
)

// loaded returns an index of n loaded fingerprints (1% with planted
// neighbours) and nq queries, half near a stored one, half random. The
// memtable budget is SIMHASHDB_BENCH_MEMTABLE_MB MiB if set, else the
// default, which grows with the index. SIMHASHDB_BENCH_TABLES picks one of
// the paper's designs by its number of tables (20, 16, 10 or 4) instead of
// the optimiser's, and SIMHASHDB_BENCH_CACHE_MB sets CacheSize in MiB
// (default 2 GiB).
func loaded(b *testing.B, n, nq int) (*DB, []uint64) {
	db, qs, _ := loadedRate(b, n, nq)
	return db, qs
}

// loadedRate is loaded that also returns the rate of its Load in
// fingerprints per second: the baseline that write benchmarks compare
// against in the same run.
func loadedRate(b *testing.B, n, nq int) (*DB, []uint64, float64) {
	return loadedWith(b, n, nq, nil)
}

// loadedWith is loadedRate with clusters stored besides the n fingerprints.
func loadedWith(b *testing.B, n, nq int, clusters []uint64) (*DB, []uint64, float64) {
	mt, err := strconv.Atoi(cmp.Or(os.Getenv("SIMHASHDB_BENCH_MEMTABLE_MB"), "0"))
	if err != nil || mt < 0 {
		b.Fatalf("SIMHASHDB_BENCH_MEMTABLE_MB: want a number of MiB, 0 for the default: %v", err)
	}
	var design *permutation.Design
	if s := os.Getenv("SIMHASHDB_BENCH_TABLES"); s != "" {
		tables, err := strconv.Atoi(s)
		if err == nil {
			design, err = permutation.Paper(tables)
		}
		if err != nil {
			b.Fatalf("SIMHASHDB_BENCH_TABLES=%q: %v", s, err)
		}
	}
	cache, err := strconv.Atoi(cmp.Or(os.Getenv("SIMHASHDB_BENCH_CACHE_MB"), "2048"))
	if err != nil || cache < 1 {
		b.Fatalf("SIMHASHDB_BENCH_CACHE_MB: want a positive number of MiB: %v", err)
	}
	db, err := Open(b.TempDir(), Options{SizeHint: int64(n), Design: design, CacheSize: int64(cache) << 20, MemtableSize: int64(mt) << 20, Sync: SyncNone})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	fps := fingerprints.Planted(n, 3, 0.01, 1)
	fps = append(fps, clusters...)
	docs := make([]Doc, len(fps))
	for i, fp := range fps {
		docs[i] = Doc{ID: uint64(i), Fingerprint: fp}
	}
	start := time.Now()
	if err := db.Load(ctx, DocsOf(docs)); err != nil {
		b.Fatal(err)
	}
	rate := float64(len(fps)) / time.Since(start).Seconds()
	return db, fingerprints.Queries(fps[:n], nq, 2), rate
}

// benchN is the loaded size of a benchmark: SIMHASHDB_BENCH_N, default 1M.
func benchN(b *testing.B) int {
	s := os.Getenv("SIMHASHDB_BENCH_N")
	if s == "" {
		return 1 << 20
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		b.Fatalf("SIMHASHDB_BENCH_N=%q: want a positive number", s)
	}
	return n
}

// BenchmarkQuery measures a warm k=3 query on benchN loaded fingerprints:
// half near a stored one, half random. The bench/ suite reports
// percentiles.
func BenchmarkQuery(b *testing.B) {
	db, qs := loaded(b, benchN(b), 4096)
	for _, q := range qs {
		db.Query(ctx, q, 3)
	}
	_, _, missed := db.cache.Stats()
	pm := db.store.Metrics().BlockCache.Misses
	runtime.GC() // warming's garbage is collected before the timed loop, not during it
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := db.Query(ctx, qs[i%len(qs)], 3); err != nil {
			b.Fatal(err)
		}
	}
	// Warm means no block is read in the timed loop: neither ours nor
	// Pebble's.
	_, _, misses := db.cache.Stats()
	b.ReportMetric(float64(misses-missed)/float64(b.N), "block-misses/op")
	b.ReportMetric(float64(db.store.Metrics().BlockCache.Misses-pm)/float64(b.N), "pebble-misses/op")
}

// BenchmarkQueryMatch is BenchmarkQuery on the queries that match: each
// looks up the documents of its matches, which a random query (the other
// half of BenchmarkQuery) does not.
func BenchmarkQueryMatch(b *testing.B) {
	db, qs := loaded(b, benchN(b), 8192)
	var near []uint64
	for _, q := range qs {
		m, err := db.Query(ctx, q, 3)
		if err != nil {
			b.Fatal(err)
		}
		if len(m) > 0 {
			near = append(near, q)
		}
	}
	if len(near) == 0 {
		b.Fatal("no query matches")
	}
	runtime.GC() // warming's garbage is collected before the timed loop, not during it
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := db.Query(ctx, near[i%len(near)], 3); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQueryCluster is BenchmarkQuery on queries each within k of
// many stored fingerprints (lookupBatch of them, one document each): the
// look-ups of their documents, which postingsOf overlaps.
func BenchmarkQueryCluster(b *testing.B) {
	r := rand.New(rand.NewPCG(3, 4))
	centers := fingerprints.Uniform(1<<14, 5) // their lines more than the CPU caches hold
	var near []uint64
	for _, c := range centers {
		seen := map[uint64]bool{}
		for len(seen) < lookupBatch {
			seen[fingerprints.Flip(c, 1+r.IntN(3), r)] = true
		}
		for fp := range seen {
			near = append(near, fp)
		}
	}
	db, _, _ := loadedWith(b, benchN(b), 0, near)
	for _, q := range centers {
		if m, err := db.Query(ctx, q, 3); err != nil || len(m) < lookupBatch {
			b.Fatalf("query %016x: %d matches, want at least %d (%v)", q, len(m), lookupBatch, err)
		}
	}
	timeQueryAppend(b, db, centers)
}

// BenchmarkQueryAppend is BenchmarkQueryMatch returning into one reused
// buffer: the allocation-free path.
func BenchmarkQueryAppend(b *testing.B) {
	db, qs := loaded(b, benchN(b), 8192)
	var buf []Match
	for _, q := range qs {
		buf, _ = db.QueryAppend(ctx, buf[:0], q, 3)
	}
	timeQueryAppend(b, db, qs)
}

// timeQueryAppend is the timed loop of the QueryAppend benchmarks: the
// queries in turn, k = 3, into one reused buffer.
func timeQueryAppend(b *testing.B, db *DB, qs []uint64) {
	var buf []Match
	runtime.GC() // warming's garbage is collected before the timed loop, not during it
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		var err error
		if buf, err = db.QueryAppend(ctx, buf[:0], qs[i%len(qs)], 3); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQueryFingerprints is BenchmarkQueryAppend asking for the
// fingerprints alone: the tables answer, no postings are looked up.
func BenchmarkQueryFingerprints(b *testing.B) {
	db, qs := loaded(b, benchN(b), 8192)
	var buf []Near
	for _, q := range qs {
		buf, _ = db.QueryFingerprints(ctx, buf[:0], q, 3)
	}
	runtime.GC() // warming's garbage is collected before the timed loop, not during it
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		var err error
		if buf, err = db.QueryFingerprints(ctx, buf[:0], qs[i%len(qs)], 3); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkQueryInsert is the crawler's loop on benchN loaded documents:
// an op is a query near a stored document (each a new one, drawn at
// random) and the insert of a new document, in batches of 100; flushes
// happen as the memtable fills.
func BenchmarkQueryInsert(b *testing.B) {
	n := benchN(b)
	db, _ := loaded(b, n, 1)
	fps := fingerprints.Planted(n, 3, 0.01, 1)
	r := rand.New(rand.NewPCG(5, 5))
	docs := make([]Doc, 0, 100)
	id := uint64(n)
	for b.Loop() {
		if _, err := db.Query(ctx, fingerprints.Flip(fps[r.IntN(n)], r.IntN(4), r), 3); err != nil {
			b.Fatal(err)
		}
		docs = append(docs, Doc{ID: id, Fingerprint: r.Uint64()})
		id++
		if len(docs) == cap(docs) {
			if err := db.InsertBatch(ctx, docs); err != nil {
				b.Fatal(err)
			}
			docs = docs[:0]
		}
	}
}

// BenchmarkQueryGrown is BenchmarkQuery on an index that online inserts
// grew to benchN fingerprints from a sixth of them loaded: its blocks carry
// pending lists, split and rewritten by flushes. Set beside BenchmarkQuery
// at the same benchN, it is what the write path costs a query.
func BenchmarkQueryGrown(b *testing.B) {
	n := benchN(b)
	db, err := Open(b.TempDir(), Options{SizeHint: int64(n), CacheSize: 2 << 30, Sync: SyncNone})
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	fps := fingerprints.Planted(n, 3, 0.01, 1)
	docs := make([]Doc, n)
	for i, fp := range fps {
		docs[i] = Doc{ID: uint64(i), Fingerprint: fp}
	}
	if err := db.Load(ctx, DocsOf(docs[:n/6])); err != nil {
		b.Fatal(err)
	}
	for i := n / 6; i < n; i += 1000 {
		if err := db.InsertBatch(ctx, docs[i:min(i+1000, n)]); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	qs := fingerprints.Queries(fps, 4096, 2)
	for _, q := range qs {
		db.Query(ctx, q, 3)
	}
	b.ResetTimer()
	for i := 0; b.Loop(); i++ {
		if _, err := db.Query(ctx, qs[i%len(qs)], 3); err != nil {
			b.Fatal(err)
		}
	}
	pending := 0
	for t := range db.st.tables {
		pending += int(db.st.tables[t].PendingTotal())
	}
	b.ReportMetric(float64(pending)/float64(len(db.st.tables))/float64(n), "pending-share")
}

// BenchmarkLoad measures the bulk loader on benchN fingerprints, sorted
// in memory, and on disk in runs of an eighth of them.
func BenchmarkLoad(b *testing.B) {
	n := benchN(b)
	fps := fingerprints.Uniform(n, 1)
	docs := make([]Doc, n)
	for i, fp := range fps {
		docs[i] = Doc{ID: uint64(i), Fingerprint: fp}
	}
	for _, sorted := range []string{"in-memory", "on-disk"} {
		b.Run(sorted, func(b *testing.B) {
			o := Options{SizeHint: int64(n), Sync: SyncNone}
			if sorted == "on-disk" {
				o.knobs.loadMemory = int64(n) * int64(unsafe.Sizeof(Doc{})) / 8
			}
			for b.Loop() {
				b.StopTimer()
				db, err := Open(b.TempDir(), o)
				if err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := db.Load(ctx, DocsOf(docs)); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				db.Close()
				b.StartTimer()
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mfp/s")
		})
	}
}

// BenchmarkQueryBatch answers 100K queries against 1M stored fingerprints,
// cold (the first batch after the load) and warm, beside the same queries
// asked one at a time (warm).
func BenchmarkQueryBatch(b *testing.B) {
	db, qs := loaded(b, 1<<20, 100_000)
	batch := func(b *testing.B) {
		for _, err := range db.QueryBatch(ctx, qs, 3) {
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	b.Run("cold", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			db.cache.Clear()
			b.StartTimer()
			batch(b)
		}
		b.ReportMetric(float64(len(qs))*float64(b.N)/b.Elapsed().Seconds(), "queries/s")
	})
	b.Run("warm", func(b *testing.B) {
		batch(b)
		b.ResetTimer()
		for b.Loop() {
			batch(b)
		}
		b.ReportMetric(float64(len(qs))*float64(b.N)/b.Elapsed().Seconds(), "queries/s")
	})
	b.Run("one-by-one", func(b *testing.B) {
		for b.Loop() {
			for _, q := range qs {
				if _, err := db.Query(ctx, q, 3); err != nil {
					b.Fatal(err)
				}
			}
		}
		b.ReportMetric(float64(len(qs))*float64(b.N)/b.Elapsed().Seconds(), "queries/s")
	})
}

// BenchmarkOnlineInsert measures inserts into an index that bulk loading
// filled (DESIGN section 5: a flush rewrites the blocks its fingerprints fall
// in, so its cost grows with the index): batches of 1000 new documents with
// the default memtable, flushes included. It reports documents per second,
// to set beside BenchmarkLoad's rate, and the bytes Pebble wrote per
// document (write amplification: a document's share of the index is about
// 90 bytes). The loaded size is benchN's.
func BenchmarkOnlineInsert(b *testing.B) {
	n := benchN(b)
	db, _, loadRate := loadedRate(b, n, 1)
	written := func() uint64 {
		t := db.store.Metrics().Total()
		return t.TableBytesFlushed + t.TableBytesCompacted + t.TableBytesIngested
	}
	r := rand.New(rand.NewPCG(9, 9))
	before := written()
	docs := make([]Doc, 1000)
	id := uint64(n)
	// Timed by hand through the last flush: b.Loop stops its timer when the
	// loop ends, and the memtables written then are not flushed yet.
	start := time.Now()
	for b.Loop() {
		for i := range docs {
			docs[i] = Doc{ID: id, Fingerprint: r.Uint64()}
			id++
		}
		if err := db.InsertBatch(ctx, docs); err != nil {
			b.Fatal(err)
		}
	}
	if err := db.Flush(ctx); err != nil {
		b.Fatal(err)
	}
	elapsed := time.Since(start)
	inserted := float64(b.N * len(docs))
	b.ReportMetric(inserted/elapsed.Seconds(), "docs/s")
	b.ReportMetric(loadRate, "load-docs/s")
	// The target (docs/performance.md): online inserts at a tenth of the bulk-load rate,
	// so 1.0 here or more.
	b.ReportMetric(10*inserted/elapsed.Seconds()/loadRate, "tenths-of-load")
	b.ReportMetric(float64(written()-before)/inserted, "B-written/doc")
	if os.Getenv("SIMHASHDB_BENCH_METRICS") != "" {
		fmt.Fprintf(os.Stderr, "Pebble after the inserts:\n%s\n", db.store.Metrics())
	}
}

// BenchmarkInsertDuringRead measures what a long read costs writers: one
// goroutine inserts documents one at a time, one a millisecond (a
// crawler's pace, not a bulk load: a writer faster than flushes waits for
// them by design), while FindAll (k = 3) or a QueryBatch of 1M queries
// runs over benchN loaded fingerprints. The slowest insert of the read's
// run is reported beside the slowest of as long a run with no read (the
// baseline of the same run).
func BenchmarkInsertDuringRead(b *testing.B) {
	n := benchN(b)
	db, qs := loaded(b, n, 1_000_000)
	reads := []struct {
		name string
		read func() error
	}{
		{"FindAll", func() error {
			for _, err := range db.FindAll(ctx, 3) {
				if err != nil {
					return err
				}
			}
			return nil
		}},
		{"QueryBatch", func() error {
			for _, err := range db.QueryBatch(ctx, qs, 3) {
				if err != nil {
					return err
				}
			}
			return nil
		}},
	}
	id := uint64(n) + 1<<40
	r := rand.New(rand.NewPCG(5, 5))
	// writeFor inserts until stop closes and returns the slowest insert.
	writeFor := func(stop <-chan struct{}) (time.Duration, error) {
		var slowest time.Duration
		tick := time.NewTicker(time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				return slowest, nil
			case <-tick.C:
			}
			start := time.Now()
			if err := db.Insert(ctx, Doc{ID: id, Fingerprint: r.Uint64()}); err != nil {
				return 0, err
			}
			id++
			slowest = max(slowest, time.Since(start))
		}
	}
	for _, rd := range reads {
		b.Run(rd.name, func(b *testing.B) {
			var during, idle time.Duration
			for b.Loop() {
				stop := make(chan struct{})
				res := make(chan time.Duration, 1)
				go func() {
					d, err := writeFor(stop)
					if err != nil {
						b.Error(err)
					}
					res <- d
				}()
				time.Sleep(50 * time.Millisecond) // the memtable holds writes when the read starts
				start := time.Now()
				if err := rd.read(); err != nil {
					b.Fatal(err)
				}
				took := time.Since(start)
				close(stop)
				during = max(during, <-res)
				stop = make(chan struct{})
				time.AfterFunc(took, func() { close(stop) })
				d, err := writeFor(stop)
				if err != nil {
					b.Fatal(err)
				}
				idle = max(idle, d)
			}
			b.ReportMetric(float64(during.Microseconds())/1000, "slowest-insert-ms")
			b.ReportMetric(float64(idle.Microseconds())/1000, "idle-slowest-insert-ms")
		})
	}
}
