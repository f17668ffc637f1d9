package bench

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"

	"github.com/simhashdb/simhashdb/engine"
)

// CurvePoint is the engine's query latency with one cache budget, measured
// in a child process that opened the index read-only with it.
type CurvePoint struct {
	// CacheMB is Options.CacheSize in MiB; 0 is the default (the zero
	// Options), which ResolvedMB says it came to.
	CacheMB int `json:"cache_mb"`
	// GoMemLimitMB is the GOMEMLIMIT the child ran with, if any: what an
	// application that bounds its heap gets.
	GoMemLimitMB int `json:"gomemlimit_mb,omitempty"`
	ResolvedMB   int `json:"resolved_cache_mb"`
	// Fits marks the smallest budget that holds the whole index: what the
	// largest budget's cache held (CachedMB), over the engine's share.
	Fits      bool      `json:"fits,omitempty"`
	CachedMB  float64   `json:"cached_mb"` // what the engine's cache held (Stats.CacheBytes)
	P50us     float64   `json:"p50_us"`
	P99us     float64   `json:"p99_us"`
	RSSMB     float64   `json:"rss_mb"`
	HitRate   float64   `json:"block_hit_rate"`
	Latencies []float64 `json:"latencies_us,omitempty"`
}

// boundedRSSMB is the GOMEMLIMIT of the curve's bounded point: the small
// cache in a process that bounds its heap.
const boundedRSSMB = 448

// curveBudgets are the cache budgets of the latency-vs-RAM curve, in MiB:
// from 32 MiB, doubling (quadrupling at 50M and up), up to the first that
// holds the whole index (at most 8 bytes a fingerprint and table and 16 a
// posting, both packed in fewer, and Pebble's eighth), or what the machine
// can hold beside the parent.
func curveBudgets(n, tables int) []int {
	need := int64(n) * int64(8*tables+16) * 8 / 7 * 5 / 4 >> 20
	most := int64(8 << 10)
	var out []int
	step := int64(2)
	if n >= 50_000_000 { // each point takes minutes there
		step = 4
	}
	for mb := int64(32); ; mb *= step {
		out = append(out, int(min(mb, most)))
		if mb >= need || mb >= most {
			return out
		}
	}
}

// cacheCurve measures the queries qs on the index in dir with each budget
// of curveBudgets and with the default options, each in a child process so
// that its resident memory is its own.
func cacheCurve(cfg Config, dir string, n, tables int, warm, qs []uint64) ([]CurvePoint, error) {
	for name, q := range map[string][]uint64{"warm.bin": warm, "queries.bin": qs} {
		if err := writeQueries(filepath.Join(dir, name), q); err != nil {
			return nil, err
		}
	}
	// What this process holds of the baselines goes back first.
	runtime.GC()
	debug.FreeOSMemory()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	var out []CurvePoint
	// Every child finds the index in the page cache, as far as it fits:
	// otherwise the first would read it from disk for the others.
	if err := readAll(filepath.Join(dir, "index")); err != nil {
		return nil, err
	}
	var runs []CurvePoint
	for _, mb := range curveBudgets(n, tables) {
		runs = append(runs, CurvePoint{CacheMB: mb})
	}
	runs = append(runs, CurvePoint{Fits: true}, CurvePoint{CacheMB: smallCacheMB, GoMemLimitMB: boundedRSSMB}, CurvePoint{CacheMB: 0})
	for _, run := range runs {
		if run.Fits {
			top := out[len(out)-1]
			if top.HitRate < 1 {
				continue // the largest budget did not hold the index either
			}
			run.CacheMB = fitBudgetMB(top.CachedMB)
		}
		mb := run.CacheMB
		res := filepath.Join(dir, "curve.json")
		cmd := exec.Command(self)
		cmd.Env = append(os.Environ(), childEnv+"=cachecurve", "SIMHASHDB_BENCH_DB="+dir, "SIMHASHDB_BENCH_CACHE_MB="+strconv.Itoa(mb),
			"SIMHASHDB_BENCH_OUT="+res)
		if run.GoMemLimitMB > 0 {
			cmd.Env = append(cmd.Env, fmt.Sprintf("GOMEMLIMIT=%dMiB", run.GoMemLimitMB))
		}
		if msg, err := cmd.CombinedOutput(); err != nil {
			return nil, fmt.Errorf("cache curve child, %d MiB: %w: %s", mb, err, msg)
		}
		js, err := os.ReadFile(res)
		if err != nil {
			return nil, err
		}
		p := run
		if err := json.Unmarshal(js, &p); err != nil {
			return nil, err
		}
		cfg.Log.Info("cache curve", "n", n, "cache MiB", mb, "GOMEMLIMIT MiB", p.GoMemLimitMB, "resolved MiB", p.ResolvedMB, "p50 us", fmt.Sprintf("%.1f", p.P50us),
			"p99 us", fmt.Sprintf("%.1f", p.P99us), "rss MB", fmt.Sprintf("%.0f", p.RSSMB), "hit rate", fmt.Sprintf("%.3f", p.HitRate))
		out = append(out, p)
	}
	return out, nil
}

// fitBudgetMB is the smallest CacheSize, in MiB, whose share for the
// engine's cache (all but Pebble's eighth) holds cachedMB, with 1% to
// spare.
func fitBudgetMB(cachedMB float64) int {
	return int(cachedMB*8/7*1.01) + 1
}

// cacheCurveChild opens the index in dir read-only with a cache of mb MiB
// (0: the default), warms it (DB.Warm, then a pass of other queries, so
// that the cache holds what a stream of queries leaves in it), times a
// pass of the queries and reads its resident memory.
func cacheCurveChild(dir, mbs, out string) error {
	mb, err := strconv.Atoi(mbs)
	if err != nil {
		return err
	}
	warm, err := readQueries(filepath.Join(dir, "warm.bin"))
	if err != nil {
		return err
	}
	qs, err := readQueries(filepath.Join(dir, "queries.bin"))
	if err != nil {
		return err
	}
	ctx := context.Background()
	db, err := engine.Open(filepath.Join(dir, "index"), engine.Options{CacheSize: int64(mb) << 20, ReadOnly: true, Logger: quiet()})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Warm(ctx); err != nil {
		return err
	}
	runtime.GC() // the collection that warming set off ends before the passes
	if _, err := latencies(db, warm, 3); err != nil {
		return err
	}
	st0, err := db.Stats(ctx)
	if err != nil {
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
	p := CurvePoint{CacheMB: mb, ResolvedMB: int(st.CacheSize >> 20), CachedMB: float64(st.CacheBytes) / (1 << 20),
		P50us: pct(lat, 0.5), P99us: pct(lat, 0.99), RSSMB: rssMB(), Latencies: lat}
	if h, m := st.CacheHits-st0.CacheHits, st.CacheMisses-st0.CacheMisses; h+m > 0 {
		p.HitRate = float64(h) / float64(h+m)
	}
	js, err := json.Marshal(p)
	if err != nil {
		return err
	}
	return os.WriteFile(out, js, 0o644)
}

// writeQueries writes fingerprints to file, 8 bytes little-endian each:
// what readQueries reads in a child.
func writeQueries(file string, qs []uint64) error {
	b := make([]byte, 0, 8*len(qs))
	for _, x := range qs {
		b = binary.LittleEndian.AppendUint64(b, x)
	}
	return os.WriteFile(file, b, 0o644)
}

func readQueries(file string) ([]uint64, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	qs := make([]uint64, len(b)/8)
	for i := range qs {
		qs[i] = binary.LittleEndian.Uint64(b[8*i:])
	}
	return qs, nil
}

// readAll reads every file under dir, for the page cache.
func readAll(dir string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(io.Discard, f)
		return err
	})
}
