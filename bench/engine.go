package bench

import (
	"context"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/simhashdb/simhashdb/bench/chart"
	"github.com/simhashdb/simhashdb/bench/data"
	"github.com/simhashdb/simhashdb/engine"
)

// EngineRow is the engine measured at one corpus size.
type EngineRow struct {
	N             int     `json:"n"`
	Tables        int     `json:"tables"`
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
	Writers []WriterRow `json:"writers"`
	Charts  []string    `json:"charts"`
}

func runEngine(cfg Config) (*EngineResults, error) {
	sizes := []int{1 << 20, 10_000_000}
	if cfg.Quick {
		sizes = []int{1 << 16}
	}
	res := &EngineResults{}
	for _, n := range sizes {
		row, err := measureEngine(cfg, n)
		if err != nil {
			return nil, err
		}
		cfg.Log.Info("engine", "n", n, "load M/s", fmt.Sprintf("%.2f", row.LoadMfps), "p50 us", fmt.Sprintf("%.1f", row.P50us),
			"p99 us", fmt.Sprintf("%.1f", row.P99us), "brute us", fmt.Sprintf("%.0f", row.BruteUs))
		res.Rows = append(res.Rows, row)
	}
	dur := 2 * time.Second
	if cfg.Quick {
		dur = 200 * time.Millisecond
	}
	for _, mode := range []engine.SyncMode{engine.SyncAlways, engine.SyncNone} {
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

func measureEngine(cfg Config, n int) (EngineRow, error) {
	row := EngineRow{N: n, K: 3}
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "simhashdb-bench-")
	if err != nil {
		return row, err
	}
	defer os.RemoveAll(dir)
	fps := data.Planted(n, 3, 0.01, cfg.Seed)
	docs := make([]engine.Doc, n)
	for i, fp := range fps {
		docs[i] = engine.Doc{ID: uint64(i), Fingerprint: fp}
	}
	// Warm: a cache that holds every decoded block.
	db, err := engine.Open(dir, engine.Options{Expected: int64(n), CacheSize: 6 << 30, Sync: engine.SyncNone, Logger: quiet()})
	if err != nil {
		return row, err
	}
	defer db.Close()
	row.Tables = len(db.Design().Tables)
	start := time.Now()
	if err := db.Load(ctx, docs); err != nil {
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
	// Queries: half near a stored fingerprint (distance 0..3), half random.
	r := rand.New(rand.NewPCG(cfg.Seed, 99))
	nq := 20000
	if cfg.Quick {
		nq = 2000
	}
	qs := make([]uint64, nq)
	for i := range qs {
		if i%2 == 0 {
			qs[i] = data.Flip(fps[r.IntN(n)], i/2%4, r)
		} else {
			qs[i] = r.Uint64()
		}
	}
	for _, q := range qs { // warm the cache
		if _, err := db.Query(ctx, q, 3); err != nil {
			return row, err
		}
	}
	lat := make([]float64, nq)
	matches := 0
	for i, q := range qs {
		t0 := time.Now()
		m, err := db.Query(ctx, q, 3)
		lat[i] = float64(time.Since(t0).Nanoseconds()) / 1e3
		if err != nil {
			return row, err
		}
		matches += len(m)
	}
	slices.Sort(lat)
	row.Queries = nq
	row.P50us, row.P90us, row.P99us = lat[nq/2], lat[nq*9/10], lat[nq*99/100]
	row.MeanMatches = float64(matches) / float64(nq)
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
	return row, nil
}

func measureWriters(cfg Config, mode engine.SyncMode, writers int, dur time.Duration) (WriterRow, error) {
	row := WriterRow{Sync: mode.String(), Writers: writers}
	dir, err := os.MkdirTemp("", "simhashdb-bench-")
	if err != nil {
		return row, err
	}
	defer os.RemoveAll(dir)
	db, err := engine.Open(dir, engine.Options{Expected: 1 << 20, Sync: mode, Logger: quiet()})
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
	if err := chart.Bars(filepath.Join(out, name), chart.Axes{Title: "Inserts per second (sync mode / concurrent writers)", Y: "inserts/s"}, labels, vals); err != nil {
		return err
	}
	r.Charts = append(r.Charts, name)
	return nil
}

func (r *EngineResults) report(md *strings.Builder) {
	md.WriteString("## Engine: bulk load and online queries (k = 3, warm, one goroutine)\n\n")
	md.WriteString("Data: uniform fingerprints with 1% given planted neighbours at distances 0..3. Queries: half within distance 0..3 of a stored fingerprint, half random. Brute force: a popcount scan of the same fingerprints as a []uint64, same run.\n\n")
	md.WriteString("| n | tables | load s | load M fp/s | p50 µs | p90 µs | p99 µs | brute force µs | p50 speed-up | table bits/fp | disk bytes/fp |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Rows {
		fmt.Fprintf(md, "| %d | %d | %.2f | %.2f | %.1f | %.1f | %.1f | %.0f | %.0fx | %.2f | %.1f |\n", x.N, x.Tables, x.LoadSeconds, x.LoadMfps,
			x.P50us, x.P90us, x.P99us, x.BruteUs, x.Speedup, x.TableBitsPerF, x.DiskBytesPerF)
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
