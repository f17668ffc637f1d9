package bench

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/simhashdb/simhashdb/bench/chart"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/simhashdb/simhashdb/permutation"
)

// EngineRow is the engine measured at one corpus size.
type EngineRow struct {
	N      int `json:"n"`
	Tables int `json:"tables"`
	// Design is "optimiser" or the paper's design, "paper-4".
	Design        string  `json:"design"`
	LoadSeconds   float64 `json:"load_seconds"`
	LoadMfps      float64 `json:"load_mfp_per_s"`
	Queries       int     `json:"queries"`
	K             int     `json:"k"`
	P50us         float64 `json:"p50_us"`
	P90us         float64 `json:"p90_us"`
	P99us         float64 `json:"p99_us"`
	MeanMatches   float64 `json:"mean_matches"`
	BruteUs       float64 `json:"brute_force_us"`
	Speedup       float64 `json:"speedup_p50_vs_brute_force"`
	TableBitsPerF float64 `json:"table_bits_per_fp"`
	DiskBytesPerF float64 `json:"disk_bytes_per_fp"`
	// PlainBytesPerF is the same index (tables, documents, postings) kept as
	// plain Pebble keys with Zstd: plainPebbleIndexBytes.
	PlainBytesPerF float64 `json:"plain_pebble_zstd_bytes_per_fp"`
	// ByK is the warm latency at each k below K.
	ByK []KLatency `json:"by_k"`
	// QPS is warm queries per second with 1 and 2 goroutines.
	QPS1 float64 `json:"qps_1_goroutine"`
	QPS2 float64 `json:"qps_2_goroutines"`
	// The in-memory baseline: sorted []uint64 tables of the same design.
	MemBuildSeconds float64 `json:"mem_build_seconds"`
	MemBytesPerFP   float64 `json:"mem_bytes_per_fp"`
	MemP50us        float64 `json:"mem_p50_us"`
	MemP99us        float64 `json:"mem_p99_us"`
	// The bucket baseline (go-simstore's design, bucketIndex) and the
	// engine, each query timed on both in turn in one loop.
	BucketBytesPerFP float64 `json:"bucket_bytes_per_fp"`
	BucketP50us      float64 `json:"bucket_p50_us"`
	BucketP99us      float64 `json:"bucket_p99_us"`
	InTurnP50us      float64 `json:"engine_in_turn_p50_us"`
	InTurnP99us      float64 `json:"engine_in_turn_p99_us"`
	// The same loop again after Warm has cached the whole index, not only
	// the blocks the queries read: what a long-running service holds.
	WarmBucketP50us float64 `json:"warm_bucket_p50_us"`
	WarmBucketP99us float64 `json:"warm_bucket_p99_us"`
	WarmInTurnP50us float64 `json:"warm_engine_in_turn_p50_us"`
	WarmInTurnP99us float64 `json:"warm_engine_in_turn_p99_us"`
	// SmallCache is the same queries after reopening with a cache of
	// SmallCacheMB (decoded blocks and Pebble's cache together).
	SmallCacheMB  int     `json:"small_cache_mb"`
	SmallP50us    float64 `json:"small_cache_p50_us"`
	SmallP99us    float64 `json:"small_cache_p99_us"`
	SmallCacheRSS float64 `json:"small_cache_rss_mb"`
	// Curve is latency against the cache budget (cacheCurve).
	Curve []CurvePoint         `json:"cache_curve"`
	CDF   map[string][]float64 `json:"-"` // sorted latencies by series, for the chart
}

// KLatency is warm query latency at one distance.
type KLatency struct {
	K     int     `json:"k"`
	P50us float64 `json:"p50_us"`
	P99us float64 `json:"p99_us"`
}

// DesignRow is one table design at one corpus size.
type DesignRow struct {
	Name          string  `json:"design"`
	N             int     `json:"n"`
	Tables        int     `json:"tables"`
	MinPrefix     int     `json:"min_prefix"`
	P50us         float64 `json:"p50_us"`
	P99us         float64 `json:"p99_us"`
	TableBitsPerF float64 `json:"table_bits_per_fp"`
	TableBytesFP  float64 `json:"table_bytes_per_fp"`
}

// WriterRow is the insert throughput with some number of writers.
type WriterRow struct {
	Sync    string  `json:"sync"`
	Writers int     `json:"writers"`
	PerSec  float64 `json:"inserts_per_s"`
}

// EngineResults is the engine section of a run.
type EngineResults struct {
	Rows    []EngineRow `json:"rows"`
	Designs []DesignRow `json:"designs"`
	Writers []WriterRow `json:"writers"`
	Charts  []string    `json:"charts"`
}

// largeN is the largest corpus of a full run, measured when the machine
// has room for it (largeFits): its in-memory baseline alone takes 13 GB.
const largeN = 100_000_000

func runEngine(cfg Config) (*EngineResults, error) {
	sizes := []int{1 << 20, 10_000_000}
	switch {
	case len(cfg.EngineSizes) > 0:
		sizes = cfg.EngineSizes
	case cfg.Quick:
		sizes = []int{1 << 16}
	case largeFits():
		sizes = append(sizes, largeN)
	default:
		cfg.Log.Warn("engine: leaving out n=100M: it needs 40 GB of free disk in the temporary folder and 22 GB of RAM")
	}
	designs := cfg.EngineTables
	if len(designs) == 0 {
		designs = []int{0}
	}
	res := &EngineResults{}
	for _, n := range sizes {
		for _, tables := range designs {
			row, err := measureEngine(cfg, n, tables)
			if err != nil {
				return nil, err
			}
			cfg.Log.Info("engine", "n", n, "design", row.Design, "load M/s", fmt.Sprintf("%.2f", row.LoadMfps), "p50 us", fmt.Sprintf("%.1f", row.P50us),
				"p99 us", fmt.Sprintf("%.1f", row.P99us), "brute us", fmt.Sprintf("%.0f", row.BruteUs), "mem p50 us", fmt.Sprintf("%.1f", row.MemP50us),
				"small cache p50/p99 us", fmt.Sprintf("%.1f/%.1f", row.SmallP50us, row.SmallP99us), "rss MB", fmt.Sprintf("%.0f", row.SmallCacheRSS),
				"qps 1/2", fmt.Sprintf("%.0f/%.0f", row.QPS1, row.QPS2))
			res.Rows = append(res.Rows, row)
		}
	}
	if len(cfg.EngineSizes) > 0 || len(cfg.EngineTables) > 0 {
		return res, res.charts(cfg.Out)
	}
	dn := 1 << 20
	if cfg.Quick {
		dn = 1 << 14
	}
	var err error
	if res.Designs, err = measureDesigns(cfg, dn); err != nil {
		return nil, err
	}
	dur := 2 * time.Second
	if cfg.Quick {
		dur = 200 * time.Millisecond
	}
	for _, mode := range []engine.SyncMode{engine.SyncAlways, engine.SyncInterval, engine.SyncNone} {
		for _, w := range []int{1, 8, 64} {
			r, err := measureWriters(cfg, mode, w, dur)
			if err != nil {
				return nil, err
			}
			cfg.Log.Info("engine inserts", "sync", r.Sync, "writers", w, "per s", fmt.Sprintf("%.0f", r.PerSec))
			res.Writers = append(res.Writers, r)
		}
	}
	return res, res.charts(cfg.Out)
}

// largeFits reports whether the temporary folder has 40 GB free and the
// machine 22 GB of RAM, what the largeN run takes.
func largeFits() bool {
	var fs syscall.Statfs_t
	if err := syscall.Statfs(os.TempDir(), &fs); err != nil || fs.Bavail*uint64(fs.Bsize) < 40<<30 {
		return false
	}
	mem, err := os.ReadFile("/proc/meminfo") // "MemTotal:  24684092 kB"
	if err != nil {
		return false
	}
	var kb uint64
	_, err = fmt.Sscanf(string(mem), "MemTotal: %d kB", &kb)
	return err == nil && kb<<10 >= 22<<30
}

// latencies times each query on one goroutine and returns the latencies in
// microseconds, sorted.
func latencies(db *engine.DB, qs []uint64, k int) ([]float64, error) {
	lat, _, err := latenciesOn(db, qs, k, 1)
	return lat, err
}

// latenciesOn times each query, g goroutines taking the next one, and
// returns the latencies in microseconds, sorted, and the time all took.
func latenciesOn(db *engine.DB, qs []uint64, k, g int) ([]float64, time.Duration, error) {
	return latenciesWith(qs, g, func() asker { return askDocuments(db, k) })
}

// An asker asks one query, as a latency-bound caller does: into buffers
// it reuses. Each goroutine has its own.
type asker func(ctx context.Context, q uint64) error

// askDocuments asks db for the documents within k (Query).
func askDocuments(db *engine.DB, k int) asker {
	var buf []engine.Match
	return func(ctx context.Context, q uint64) (err error) {
		buf, err = db.QueryAppend(ctx, buf[:0], q, k)
		return err
	}
}

// askFingerprints asks db for the fingerprints within k alone
// (QueryFingerprints).
func askFingerprints(db *engine.DB, k int) asker {
	var buf []engine.Near
	return func(ctx context.Context, q uint64) (err error) {
		buf, err = db.QueryFingerprints(ctx, buf[:0], q, k)
		return err
	}
}

// latenciesWith is latenciesOn asking each query with an asker of
// newAsker's, one a goroutine.
func latenciesWith(qs []uint64, g int, newAsker func() asker) ([]float64, time.Duration, error) {
	ctx := context.Background()
	lat := make([]float64, len(qs))
	var next atomic.Int64
	errs := make([]error, g)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ask := newAsker()
			for i := int(next.Add(1) - 1); i < len(qs); i = int(next.Add(1) - 1) {
				t0 := time.Now()
				err := ask(ctx, qs[i])
				lat[i] = float64(time.Since(t0).Nanoseconds()) / 1e3
				if err != nil {
					errs[w] = err
					return
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	slices.Sort(lat)
	return lat, elapsed, errors.Join(errs...)
}

func pct(sorted []float64, p float64) float64 {
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p))]
}

// qps runs the queries on g goroutines for about dur and returns queries
// per second.
func qps(db *engine.DB, qs []uint64, g int, dur time.Duration) (float64, error) {
	var count atomic.Int64
	var firstErr error
	var once sync.Once
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	start := time.Now()
	for w := range g {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w * len(qs) / g; time.Now().Before(deadline); i++ {
				if _, err := db.Query(context.Background(), qs[i%len(qs)], 3); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				count.Add(1)
			}
		}()
	}
	wg.Wait()
	return float64(count.Load()) / time.Since(start).Seconds(), firstErr
}

// rssMB reads this process's resident memory.
func rssMB() float64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 64)
			return kb / 1024
		}
	}
	return 0
}

const smallCacheMB = 32

// paperDesign returns the design that --engine-tables names: the
// optimiser's (0, a nil design) or the paper's of that many tables.
func paperDesign(tables int) (name string, d *permutation.Design, err error) {
	if tables == 0 {
		return "optimiser", nil, nil
	}
	if d, err = permutation.Paper(tables); err != nil {
		return "", nil, err
	}
	return fmt.Sprintf("paper-%d", tables), d, nil
}

// measureEngine measures an index of n fingerprints with the optimiser's
// design (tables 0) or the paper's of that many tables.
func measureEngine(cfg Config, n, tables int) (EngineRow, error) {
	row := EngineRow{N: n, K: 3, CDF: map[string][]float64{}}
	name, design, err := paperDesign(tables)
	if err != nil {
		return row, err
	}
	row.Design = name
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "simhashdb-bench-")
	if err != nil {
		return row, err
	}
	defer os.RemoveAll(dir)
	fps := fingerprints.Planted(n, 3, 0.01, cfg.Seed)
	docs := make([]engine.Doc, n)
	for i, fp := range fps {
		docs[i] = engine.Doc{ID: uint64(i), Fingerprint: fp}
	}
	// Warm: a cache that holds every decoded block.
	db, err := engine.Open(filepath.Join(dir, "index"), engine.Options{SizeHint: int64(n), Design: design, CacheSize: 6 << 30, Sync: engine.SyncNone, Logger: quiet()})
	if err != nil {
		return row, err
	}
	defer db.Close() // a second Close after the small-cache run is harmless
	row.Tables = len(db.Design().Tables)
	start := time.Now()
	if err := db.Load(ctx, engine.DocsOf(docs)); err != nil {
		return row, err
	}
	row.LoadSeconds = time.Since(start).Seconds()
	row.LoadMfps = float64(n) / row.LoadSeconds / 1e6
	docs = nil
	st, err := db.Stats(ctx)
	if err != nil {
		return row, err
	}
	row.TableBitsPerF = st.BitsPerFingerprint
	row.DiskBytesPerF = float64(st.BytesOnDisk) / float64(n)
	if n <= 10_000_000 { // above, sorting and writing it all again would take longer than the rest
		plain, err := plainPebbleIndexBytes(db.Design(), fps)
		if err != nil {
			return row, err
		}
		row.PlainBytesPerF = float64(plain) / float64(n)
	}
	cfg.Log.Info("index size", "n", n, "disk bytes/fp", fmt.Sprintf("%.1f", row.DiskBytesPerF), "plain Pebble+Zstd bytes/fp", fmt.Sprintf("%.1f", row.PlainBytesPerF))
	nq := 20000
	if cfg.Quick {
		nq = 2000
	}
	qs := fingerprints.Queries(fps, nq, cfg.Seed)
	if _, err := latencies(db, qs, 3); err != nil { // warm the cache
		return row, err
	}
	lat, err := latencies(db, qs, 3)
	if err != nil {
		return row, err
	}
	matches := 0
	for _, q := range qs {
		m, err := db.Query(ctx, q, 3)
		if err != nil {
			return row, err
		}
		matches += len(m)
	}
	row.Queries = nq
	row.P50us, row.P90us, row.P99us = pct(lat, 0.5), pct(lat, 0.9), pct(lat, 0.99)
	row.MeanMatches = float64(matches) / float64(nq)
	row.CDF["simhashdb, warm"] = lat
	for k := 1; k < 3; k++ {
		l, err := latencies(db, qs, k)
		if err != nil {
			return row, err
		}
		row.ByK = append(row.ByK, KLatency{k, pct(l, 0.5), pct(l, 0.99)})
	}
	row.ByK = append(row.ByK, KLatency{3, row.P50us, row.P99us})
	dur := time.Second
	if cfg.Quick {
		dur = 100 * time.Millisecond
	}
	if row.QPS1, err = qps(db, qs, 1, dur); err != nil {
		return row, err
	}
	if row.QPS2, err = qps(db, qs, 2, dur); err != nil {
		return row, err
	}
	// Baseline: a brute-force popcount scan of the same fingerprints.
	nb := 20
	t0 := time.Now()
	found := 0
	for _, q := range qs[:nb] {
		for _, fp := range fps {
			if bits.OnesCount64(fp^q) <= 3 {
				found++
			}
		}
	}
	row.BruteUs = float64(time.Since(t0).Nanoseconds()) / 1e3 / float64(nb)
	row.Speedup = row.BruteUs / row.P50us
	if found == 0 && n > 1000 {
		return row, fmt.Errorf("brute force found no neighbours of planted queries")
	}
	// Baseline: the in-memory sorted tables of the same design.
	start = time.Now()
	mi := newMemIndex(db.Design(), fps)
	row.MemBuildSeconds = time.Since(start).Seconds()
	row.MemBytesPerFP = float64(mi.bytes()) / float64(n)
	var buf []uint64
	memLat := make([]float64, len(qs))
	for pass := range 2 { // the first pass warms the CPU caches, as the engine's did
		for i, q := range qs {
			t0 := time.Now()
			buf = mi.query(q, 3, buf)
			if pass == 1 {
				memLat[i] = float64(time.Since(t0).Nanoseconds()) / 1e3
			}
		}
	}
	// Both must find the same fingerprints.
	for _, q := range qs[:min(len(qs), 500)] {
		m, err := db.Query(ctx, q, 3)
		if err != nil {
			return row, err
		}
		got := map[uint64]bool{}
		for _, x := range m {
			got[x.Fingerprint] = true
		}
		if buf = mi.query(q, 3, buf); len(buf) != len(got) {
			return row, fmt.Errorf("query %016x: the in-memory baseline finds %d fingerprints, the engine %d", q, len(buf), len(got))
		}
	}
	slices.Sort(memLat)
	row.MemP50us, row.MemP99us = pct(memLat, 0.5), pct(memLat, 0.99)
	row.CDF["in-memory sorted tables"] = memLat
	if err := bucketBaseline(ctx, db, fps, qs, &row); err != nil {
		return row, err
	}
	// Latency against the cache budget, each budget in a child process so
	// that its resident memory is the query workload's alone (this process
	// has held gigabytes of test data and caches, which the allocators keep).
	if err := db.Close(); err != nil {
		return row, err
	}
	if row.Curve, err = cacheCurve(cfg, dir, n, row.Tables, fingerprints.Queries(fps, nq, cfg.Seed+1), qs); err != nil {
		return row, err
	}
	for i := range row.Curve {
		p := &row.Curve[i]
		switch {
		case p.GoMemLimitMB > 0:
		case p.CacheMB == smallCacheMB:
			row.SmallCacheMB = smallCacheMB
			row.SmallP50us, row.SmallP99us, row.SmallCacheRSS = p.P50us, p.P99us, p.RSSMB
			row.CDF[fmt.Sprintf("simhashdb, %d MiB cache", smallCacheMB)] = p.Latencies
		case p.CacheMB == 0:
			row.CDF[fmt.Sprintf("simhashdb, default options (%d MiB cache)", p.ResolvedMB)] = p.Latencies
		}
		p.Latencies = nil
	}
	return row, nil
}

// measureDesigns compares the optimiser's design with the paper's four of
// Example 3.1 at one corpus size: latency against space.
func measureDesigns(cfg Config, n int) ([]DesignRow, error) {
	ctx := context.Background()
	fps := fingerprints.Planted(n, 3, 0.01, cfg.Seed)
	docs := make([]engine.Doc, n)
	for i, fp := range fps {
		docs[i] = engine.Doc{ID: uint64(i), Fingerprint: fp}
	}
	qs := fingerprints.Queries(fps, 5000, cfg.Seed)
	var rows []DesignRow
	for _, name := range []string{"optimiser", "paper-20", "paper-16", "paper-10", "paper-4"} {
		var d *permutation.Design
		if name != "optimiser" {
			var err error
			if d, err = permutation.Paper(map[string]int{"paper-20": 20, "paper-16": 16, "paper-10": 10, "paper-4": 4}[name]); err != nil {
				return nil, err
			}
		}
		dir, err := os.MkdirTemp("", "simhashdb-bench-")
		if err != nil {
			return nil, err
		}
		err = func() error {
			defer os.RemoveAll(dir)
			db, err := engine.Open(dir, engine.Options{SizeHint: int64(n), Design: d, CacheSize: 6 << 30, Sync: engine.SyncNone, Logger: quiet()})
			if err != nil {
				return err
			}
			defer db.Close()
			if err := db.Load(ctx, engine.DocsOf(docs)); err != nil {
				return err
			}
			if _, err := latencies(db, qs, 3); err != nil {
				return err
			}
			lat, err := latencies(db, qs, 3)
			if err != nil {
				return err
			}
			st, err := db.Stats(ctx)
			if err != nil {
				return err
			}
			row := DesignRow{Name: name, N: n, Tables: len(st.Tables), MinPrefix: db.Design().MinPrefix(), P50us: pct(lat, 0.5), P99us: pct(lat, 0.99),
				TableBitsPerF: st.BitsPerFingerprint, TableBytesFP: float64(st.TableBytes) / float64(n)}
			cfg.Log.Info("design", "name", name, "tables", row.Tables, "p50 us", fmt.Sprintf("%.1f", row.P50us), "table bytes/fp", fmt.Sprintf("%.1f", row.TableBytesFP))
			rows = append(rows, row)
			return nil
		}()
		if err != nil {
			return nil, fmt.Errorf("design %s: %w", name, err)
		}
	}
	return rows, nil
}

func measureWriters(cfg Config, mode engine.SyncMode, writers int, dur time.Duration) (WriterRow, error) {
	row := WriterRow{Sync: mode.String(), Writers: writers}
	dir, err := os.MkdirTemp("", "simhashdb-bench-")
	if err != nil {
		return row, err
	}
	defer os.RemoveAll(dir)
	db, err := engine.Open(dir, engine.Options{SizeHint: 1 << 20, Sync: mode, Logger: quiet()})
	if err != nil {
		return row, err
	}
	defer db.Close()
	var count atomic.Int64
	var firstErr error
	var once sync.Once
	deadline := time.Now().Add(dur)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(cfg.Seed, uint64(w)))
			for i := uint64(0); time.Now().Before(deadline); i++ {
				if err := db.Insert(context.Background(), engine.Doc{ID: uint64(w)<<40 | i, Fingerprint: r.Uint64()}); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
				count.Add(1)
			}
		}()
	}
	start := time.Now()
	wg.Wait()
	row.PerSec = float64(count.Load()) / time.Since(start).Seconds()
	return row, firstErr
}

func (r *EngineResults) charts(out string) error {
	var labels []string
	var vals []float64
	for _, w := range r.Writers {
		labels = append(labels, fmt.Sprintf("%s/%d", w.Sync, w.Writers))
		vals = append(vals, w.PerSec)
	}
	name := "engine-inserts.png"
	if len(r.Writers) > 0 {
		if err := chart.Bars(filepath.Join(out, name), chart.Axes{Title: "Inserts per second (sync mode / concurrent writers)", Y: "inserts/s"}, labels, vals); err != nil {
			return err
		}
		r.Charts = append(r.Charts, name)
	}
	if len(r.Rows) == 0 {
		return nil
	}
	// Latency versus n.
	series := []chart.Series{{Name: "simhashdb p50"}, {Name: "simhashdb p99", Dashed: true}, {Name: "in-memory tables p50"},
		{Name: "in-memory tables p99", Dashed: true}, {Name: "simhashdb p50, small cache"}, {Name: "brute force"}}
	for _, x := range r.Rows {
		if x.Design != "optimiser" {
			continue // the curve chart has the other designs
		}
		for i, y := range []float64{x.P50us, x.P99us, x.MemP50us, x.MemP99us, x.SmallP50us, x.BruteUs} {
			series[i].X = append(series[i].X, float64(x.N))
			series[i].Y = append(series[i].Y, y)
		}
	}
	name = "engine-latency-vs-n.png"
	if err := chart.Lines(filepath.Join(out, name), chart.Axes{Title: "Query latency, k = 3, one goroutine", X: "stored fingerprints",
		Y: "microseconds", LogX: true, LogY: true, LegendTop: true, LegendLeft: true}, series); err != nil {
		return err
	}
	r.Charts = append(r.Charts, name)
	if err := r.curveChart(out); err != nil {
		return err
	}
	// Latency CDF at the largest n.
	last := r.Rows[len(r.Rows)-1]
	var cdf []chart.Series
	for _, k := range slices.Sorted(maps.Keys(last.CDF)) {
		lat := last.CDF[k]
		s := chart.Series{Name: k}
		for i := 0; i < len(lat); i += max(1, len(lat)/400) {
			s.X = append(s.X, lat[i])
			s.Y = append(s.Y, float64(i+1)/float64(len(lat)))
		}
		cdf = append(cdf, s)
	}
	name = "engine-latency-cdf.png"
	if err := chart.Lines(filepath.Join(out, name), chart.Axes{Title: fmt.Sprintf("Query latency CDF at %d stored fingerprints, k = 3", last.N),
		X: "microseconds", Y: "fraction of queries", LogX: true, LegendLeft: true, LegendTop: true}, cdf); err != nil {
		return err
	}
	r.Charts = append(r.Charts, name)
	return nil
}

func (r *EngineResults) report(md *strings.Builder) {
	md.WriteString("## Engine: bulk load and online queries (k = 3, warm, one goroutine)\n\n")
	md.WriteString("Data: uniform fingerprints with 1% given planted neighbours at distances 0..3. Queries: half within distance 0..3 of a stored fingerprint, half random. Brute force: a popcount scan of the same fingerprints as a []uint64, same run. In-memory tables: the approach of simhash-cpp and go-simstore (one sorted []uint64 per table of the same design, binary search, scan), same run, same queries, checked to find the same fingerprints.\n\n")
	md.WriteString("| n | tables | load s | load M fp/s | p50 µs | p90 µs | p99 µs | brute force µs | p50 speed-up | table bits/fp | disk bytes/fp | plain Pebble+Zstd bytes/fp | index vs plain |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Rows {
		plain, ratio := "—", "—"
		if x.PlainBytesPerF > 0 {
			plain, ratio = fmt.Sprintf("%.1f", x.PlainBytesPerF), fmt.Sprintf("%.2fx smaller", x.PlainBytesPerF/x.DiskBytesPerF)
		}
		fmt.Fprintf(md, "| %s | %d | %.2f | %.2f | %.1f | %.1f | %.1f | %.0f | %.0fx | %.2f | %.1f | %s | %s |\n", x.label(), x.Tables, x.LoadSeconds, x.LoadMfps,
			x.P50us, x.P90us, x.P99us, x.BruteUs, x.Speedup, x.TableBitsPerF, x.DiskBytesPerF, plain, ratio)
	}
	md.WriteString("\nDisk bytes/fp is everything in the index folder (tables, documents, postings, metadata, WAL) over the documents stored. The plain Pebble column holds the same: each table as 9-byte keys (table, permuted fingerprint), documents as id -> fingerprint, postings as (fingerprint, id) keys, in one sstable with Zstd as Pebble writes its bottom level; measured up to 10M (\"—\" above: writing it all again would take longer than the rest of the run).\n")
	md.WriteString("\n### Against the in-memory baseline, with a small cache, by k, by goroutines\n\n")
	md.WriteString("| n | in-memory build s | in-memory bytes/fp | in-memory p50 / p99 µs | simhashdb p50 / p99 µs | simhashdb disk bytes/fp | small cache | small-cache p50 / p99 µs | RSS with small cache MB | k=1 p50 / p99 | k=2 p50 / p99 | QPS 1 / 2 goroutines |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Rows {
		byK := map[int]KLatency{}
		for _, l := range x.ByK {
			byK[l.K] = l
		}
		fmt.Fprintf(md, "| %s | %.2f | %.0f | %.1f / %.1f | %.1f / %.1f | %.1f | %d MiB | %.1f / %.1f | %.0f | %.1f / %.1f | %.1f / %.1f | %.0f / %.0f |\n", x.label(), x.MemBuildSeconds, x.MemBytesPerFP,
			x.MemP50us, x.MemP99us, x.P50us, x.P99us, x.DiskBytesPerF, x.SmallCacheMB, x.SmallP50us, x.SmallP99us, x.SmallCacheRSS,
			byK[1].P50us, byK[1].P99us, byK[2].P50us, byK[2].P99us, x.QPS1, x.QPS2)
	}
	md.WriteString("\n### Against the bucket baseline, timed in turn\n\n")
	md.WriteString("Each query timed on the engine and then on the bucket baseline (go-simstore's design: k+1 blocks, a table of buckets per block, every entry of the query's buckets checked by popcount; `bench/bucketindex.go`) in one loop.\n\n")
	md.WriteString("Engine cache: the blocks the queries read (after a first pass), or the whole index (the same loop again after `Warm` has cached every block and posting; up to 20M).\n\n")
	md.WriteString("| n | engine cache | bucket bytes/fp | bucket p50 / p99 µs | simhashdb p50 / p99 µs (same loop) | p50 ratio | p99 ratio |\n|---:|---|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Rows {
		fmt.Fprintf(md, "| %s | queried blocks | %.1f | %.2f / %.2f | %.2f / %.2f | %.2fx | %.2fx |\n", x.label(), x.BucketBytesPerFP, x.BucketP50us, x.BucketP99us,
			x.InTurnP50us, x.InTurnP99us, x.InTurnP50us/x.BucketP50us, x.InTurnP99us/x.BucketP99us)
		if x.WarmBucketP50us > 0 {
			fmt.Fprintf(md, "| %s | whole index | %.1f | %.2f / %.2f | %.2f / %.2f | %.2fx | %.2fx |\n", x.label(), x.BucketBytesPerFP, x.WarmBucketP50us, x.WarmBucketP99us,
				x.WarmInTurnP50us, x.WarmInTurnP99us, x.WarmInTurnP50us/x.WarmBucketP50us, x.WarmInTurnP99us/x.WarmBucketP99us)
		}
	}
	md.WriteString("\n### Latency against memory: the cache budget\n\n")
	md.WriteString("Each budget in a child process that opens the index read-only with that `CacheSize` (decoded blocks, postings and Pebble's cache together; 0 is the zero `Options`, whose default the next column shows), calls `Warm`, runs 20,000 other queries to settle the cache as a stream of queries leaves it, then times the queries; RSS is the child's resident memory at the end, everything included. Hit rate: blocks found decoded in the timed pass. The baselines' memory is their data structure's bytes alone. \"Fits the index\": the smallest budget whose share for the engine's cache (all but Pebble's eighth) holds what the largest budget's held.\n\n")
	md.WriteString("| n | CacheSize MiB | resolved MiB | GOMEMLIMIT | p50 / p99 µs | RSS MB | RSS bytes/fp | block hit rate |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Rows {
		for _, p := range x.Curve {
			lim := "—"
			if p.GoMemLimitMB > 0 {
				lim = fmt.Sprintf("%d MiB", p.GoMemLimitMB)
			}
			budget := strconv.Itoa(p.CacheMB)
			if p.Fits {
				budget += " (fits the index)"
			}
			fmt.Fprintf(md, "| %s | %s | %d | %s | %.1f / %.1f | %.0f | %.1f | %.3f |\n", x.label(), budget, p.ResolvedMB, lim, p.P50us, p.P99us, p.RSSMB, p.RSSMB*1e6/float64(x.N), p.HitRate)
		}
		fmt.Fprintf(md, "| %s | bucket baseline | | | %.1f / %.1f | %.0f | %.1f | |\n", x.label(), x.BucketP50us, x.BucketP99us, x.BucketBytesPerFP*float64(x.N)/1e6, x.BucketBytesPerFP)
		fmt.Fprintf(md, "| %s | sorted tables | | | %.1f / %.1f | %.0f | %.1f | |\n", x.label(), x.MemP50us, x.MemP99us, x.MemBytesPerFP*float64(x.N)/1e6, x.MemBytesPerFP)
	}
	md.WriteString("\nSmall cache: a child process opens the index read-only with that cache (decoded blocks and Pebble's block cache together), runs the queries once to warm what fits, as in the table above. The in-memory baseline returns fingerprints only; simhashdb also fetches each match's document (id, name).\n")
	if len(r.Designs) > 0 {
		fmt.Fprintf(md, "\n### Table designs at %d fingerprints (the paper's space/time trade-off, measured)\n\n", r.Designs[0].N)
		md.WriteString("| design | tables | min p_i | p50 µs | p99 µs | table bits/fp (one table) | table bytes/fp (all tables) |\n|---|---:|---:|---:|---:|---:|---:|\n")
		for _, d := range r.Designs {
			fmt.Fprintf(md, "| %s | %d | %d | %.1f | %.1f | %.2f | %.1f |\n", d.Name, d.Tables, d.MinPrefix, d.P50us, d.P99us, d.TableBitsPerF, d.TableBytesFP)
		}
	}
	md.WriteString("\n### Inserts (one document per call)\n\n| sync | writers | inserts/s |\n|---|---:|---:|\n")
	for _, w := range r.Writers {
		fmt.Fprintf(md, "| %s | %d | %.0f |\n", w.Sync, w.Writers, w.PerSec)
	}
	md.WriteString("\n")
	for _, ch := range r.Charts {
		fmt.Fprintf(md, "![%s](%s)\n\n", ch, ch)
	}
}

// bucketBaseline measures the bucket baseline against the engine, each
// query timed on one and then the other in the same loop (the machine's
// noise falls on both), after checking that they find the same.
func bucketBaseline(ctx context.Context, db *engine.DB, fps, qs []uint64, row *EngineRow) error {
	bi, err := newBucketIndex(3, fingerprints.Sorted(slices.Clone(fps)))
	if err != nil {
		return err
	}
	row.BucketBytesPerFP = float64(bi.bytes()) / float64(len(fps))
	var buf []uint64
	for _, q := range qs[:min(len(qs), 500)] {
		m, err := db.Query(ctx, q, 3)
		if err != nil {
			return err
		}
		got := map[uint64]bool{}
		for _, x := range m {
			got[x.Fingerprint] = true
		}
		if buf = bi.query(q, 3, buf); len(buf) != len(got) {
			return fmt.Errorf("query %016x: the bucket baseline finds %d fingerprints, the engine %d", q, len(buf), len(got))
		}
	}
	eng, bucket, err := inTurn(ctx, db, bi, qs)
	if err != nil {
		return err
	}
	row.BucketP50us, row.BucketP99us = pct(bucket, 0.5), pct(bucket, 0.99)
	row.InTurnP50us, row.InTurnP99us = pct(eng, 0.5), pct(eng, 0.99)
	row.CDF["bucket tables (go-simstore's design)"] = bucket
	if len(fps) > wholeWarmMax {
		return nil
	}
	if err := db.Warm(ctx); err != nil {
		return err
	}
	runtime.GC() // Warm's garbage, before the timed loop
	if eng, bucket, err = inTurn(ctx, db, bi, qs); err != nil {
		return err
	}
	row.WarmBucketP50us, row.WarmBucketP99us = pct(bucket, 0.5), pct(bucket, 0.99)
	row.WarmInTurnP50us, row.WarmInTurnP99us = pct(eng, 0.5), pct(eng, 0.99)
	return nil
}

// wholeWarmMax is the largest index whose in-turn loop is run again with
// the whole index cached: above, the 6 GiB cache does not hold it.
const wholeWarmMax = 20_000_000

// inTurn times each query on the engine and then on the bucket baseline,
// twice over the queries (the first pass warms both), and returns the
// second pass's latencies in µs, sorted.
func inTurn(ctx context.Context, db *engine.DB, bi *bucketIndex, qs []uint64) (eng, bucket []float64, err error) {
	eng, bucket = make([]float64, len(qs)), make([]float64, len(qs))
	var mbuf []engine.Match
	var buf []uint64
	for pass := range 2 {
		for i, q := range qs {
			t0 := time.Now()
			if mbuf, err = db.QueryAppend(ctx, mbuf[:0], q, 3); err != nil {
				return nil, nil, err
			}
			t1 := time.Now()
			buf = bi.query(q, 3, buf)
			t2 := time.Now()
			if pass == 1 {
				eng[i], bucket[i] = float64(t1.Sub(t0).Nanoseconds())/1e3, float64(t2.Sub(t1).Nanoseconds())/1e3
			}
		}
	}
	slices.Sort(eng)
	slices.Sort(bucket)
	return eng, bucket, nil
}

// curveChart draws latency against resident memory for the rows of 10M
// fingerprints or more (the largest row if none), the baselines as points.
func (r *EngineResults) curveChart(out string) error {
	var rows []EngineRow
	for _, x := range r.Rows {
		if x.N >= 10_000_000 && len(x.Curve) > 0 {
			rows = append(rows, x)
		}
	}
	if len(rows) == 0 && len(r.Rows[len(r.Rows)-1].Curve) > 0 {
		rows = r.Rows[len(r.Rows)-1:]
	}
	if len(rows) == 0 {
		return nil
	}
	var series []chart.Series
	for _, x := range rows {
		name := millions(x.N)
		if x.Design != "optimiser" {
			name += fmt.Sprintf(", %d tables", x.Tables)
		}
		p50, p99 := chart.Series{Name: "simhashdb p50, " + name}, chart.Series{Name: "simhashdb p99, " + name, Dashed: true}
		curve := slices.Clone(x.Curve)
		slices.SortFunc(curve, func(a, b CurvePoint) int { return cmp.Compare(a.RSSMB, b.RSSMB) })
		for _, p := range curve {
			if p.GoMemLimitMB > 0 {
				continue // another configuration: in the table
			}
			p50.X, p50.Y = append(p50.X, p.RSSMB), append(p50.Y, p.P50us)
			p99.X, p99.Y = append(p99.X, p.RSSMB), append(p99.Y, p.P99us)
		}
		series = append(series, p50, p99)
		if x.Design != "optimiser" && slices.ContainsFunc(rows, func(y EngineRow) bool { return y.N == x.N && y.Design == "optimiser" }) {
			continue // the baselines are drawn once for each n
		}
		bmb, smb := x.BucketBytesPerFP*float64(x.N)/1e6, x.MemBytesPerFP*float64(x.N)/1e6
		series = append(series,
			chart.Series{Name: "bucket design p50, p99, " + name, X: []float64{bmb, bmb}, Y: []float64{x.BucketP50us, x.BucketP99us}},
			chart.Series{Name: "sorted tables p50, p99, " + name, X: []float64{smb, smb}, Y: []float64{x.MemP50us, x.MemP99us}})
	}
	// The legend goes where the curves are not: above the warm end of a
	// curve at 10M, below the slow plateau of one at 100M.
	top := !slices.ContainsFunc(rows, func(x EngineRow) bool { return x.N >= 50_000_000 })
	name := "engine-latency-vs-ram.png"
	if err := chart.Lines(filepath.Join(out, name), chart.Axes{Title: "Query latency against memory, k = 3 (engine: process RSS by cache budget)",
		X: "MB resident", Y: "microseconds", LogX: true, LogY: true, LegendTop: top}, series); err != nil {
		return err
	}
	r.Charts = append(r.Charts, name)
	return nil
}

// label names a row in the report's tables: its n, and its design unless
// the optimiser's.
func (x *EngineRow) label() string {
	if x.Design == "" || x.Design == "optimiser" {
		return strconv.Itoa(x.N)
	}
	return fmt.Sprintf("%d (%s)", x.N, x.Design)
}

// millions names a corpus size: "10M".
func millions(n int) string {
	if n%1_000_000 == 0 {
		return fmt.Sprintf("%dM", n/1_000_000)
	}
	return strconv.Itoa(n)
}
