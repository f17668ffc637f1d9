package bench

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"math/bits"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/simhashdb/simhashdb/permutation"
)

// BatchRow is QueryBatch against a stored index, beside the same queries
// asked one at a time.
type BatchRow struct {
	Stored  int `json:"stored"`
	Queries int `json:"queries"`
	// ColdSeconds is the first batch of this size: blocks not cached yet
	// are read from Pebble and decoded.
	ColdSeconds float64 `json:"cold_seconds"`
	// Seconds is the same batch again, warm.
	Seconds float64 `json:"seconds"`
	// StoredPerSecPerCore is the paper's measure, warm: stored fingerprints
	// covered per second, per core.
	StoredPerSecPerCore float64 `json:"stored_fp_per_s_per_core"`
	QueriesPerSec       float64 `json:"queries_per_s"`
	// OneByOnePerSec is Query called in a loop on one goroutine, same run.
	OneByOnePerSec float64 `json:"one_by_one_queries_per_s"`
	Matches        int     `json:"matches"`
}

// FindAllRow is one find-all run: a child process, measured by the kernel.
type FindAllRow struct {
	N       int     `json:"n"`
	Tool    string  `json:"tool"`
	Seconds float64 `json:"wall_seconds"`
	CPU     float64 `json:"cpu_seconds"`
	PeakMB  float64 `json:"peak_rss_mb"`
	Pairs   int     `json:"pairs"`
}

// BatchResults is the batch section.
type BatchResults struct {
	Cores int        `json:"cores"`
	Batch []BatchRow `json:"query_batch"`
	// FindAllDB is DB.FindAll(3) over the stored index of the batch rows.
	FindAllDB struct {
		Stored  int     `json:"stored"`
		Seconds float64 `json:"seconds"`
		Pairs   int     `json:"pairs"`
	} `json:"find_all_db"`
	FindAll []FindAllRow `json:"find_all"`
}

func runBatch(cfg Config) (*BatchResults, error) {
	res := &BatchResults{Cores: runtime.GOMAXPROCS(0)}
	stored, queries, findAll := 10_000_000, []int{10_000, 100_000, 1_000_000}, []int{1 << 20, 10_000_000}
	if cfg.Quick {
		stored, queries, findAll = 1<<16, []int{1000, 10_000}, []int{1 << 16}
	}
	if err := measureBatch(cfg, res, stored, queries); err != nil {
		return nil, err
	}
	bin, cleanup, err := buildCLI()
	if err != nil {
		return nil, err
	}
	defer cleanup()
	for _, n := range findAll {
		r, err := measureFindAll(cfg, bin, n)
		if err != nil {
			return nil, err
		}
		res.FindAll = append(res.FindAll, r...)
	}
	return res, nil
}

func measureBatch(cfg Config, res *BatchResults, n int, sizes []int) error {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "simhashdb-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	fps := fingerprints.Planted(n, 3, 0.01, cfg.Seed)
	docs := make([]engine.Doc, n)
	for i, fp := range fps {
		docs[i] = engine.Doc{ID: uint64(i), Fingerprint: fp}
	}
	db, err := engine.Open(dir, engine.Options{SizeHint: int64(n), CacheSize: 6 << 30, Sync: engine.SyncNone, Logger: quiet()})
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.Load(ctx, engine.DocsOf(docs)); err != nil {
		return err
	}
	docs = nil
	for _, nq := range sizes {
		qs := fingerprints.Queries(fps, nq, cfg.Seed+7)
		row := BatchRow{Stored: n, Queries: nq}
		for pass := range 2 {
			start := time.Now()
			row.Matches = 0
			for res, err := range db.QueryBatch(ctx, qs, 3) {
				if err != nil {
					return err
				}
				row.Matches += len(res.Matches)
			}
			if pass == 0 {
				row.ColdSeconds = time.Since(start).Seconds()
			} else {
				row.Seconds = time.Since(start).Seconds()
			}
		}
		row.QueriesPerSec = float64(nq) / row.Seconds
		row.StoredPerSecPerCore = float64(n) / row.Seconds / float64(runtime.GOMAXPROCS(0))
		// The baseline: the same queries one at a time (a sample of them at
		// most, so the run stays short), same cache state.
		one := qs[:min(nq, 20000)]
		start := time.Now()
		for _, q := range one {
			if _, err := db.Query(ctx, q, 3); err != nil {
				return err
			}
		}
		row.OneByOnePerSec = float64(len(one)) / time.Since(start).Seconds()
		cfg.Log.Info("query batch", "stored", n, "queries", nq, "cold s", fmt.Sprintf("%.2f", row.ColdSeconds), "warm s", fmt.Sprintf("%.2f", row.Seconds),
			"stored M/s/core", fmt.Sprintf("%.1f", row.StoredPerSecPerCore/1e6), "one by one q/s", fmt.Sprintf("%.0f", row.OneByOnePerSec))
		res.Batch = append(res.Batch, row)
	}
	start := time.Now()
	res.FindAllDB.Stored = n
	for _, err := range db.FindAll(ctx, 3) {
		if err != nil {
			return err
		}
		res.FindAllDB.Pairs++
	}
	res.FindAllDB.Seconds = time.Since(start).Seconds()
	cfg.Log.Info("FindAll over the index", "stored", n, "s", fmt.Sprintf("%.2f", res.FindAllDB.Seconds), "pairs", res.FindAllDB.Pairs)
	return nil
}

// buildCLI builds the simhashdb command, which find-all runs as a user would.
func buildCLI() (string, func(), error) {
	dir, err := os.MkdirTemp("", "simhashdb-cli-")
	if err != nil {
		return "", nil, err
	}
	bin := filepath.Join(dir, "simhashdb")
	if out, err := exec.Command("go", "build", "-o", bin, "github.com/simhashdb/simhashdb/tools/simhashdb").CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		return "", nil, fmt.Errorf("building the CLI: %w\n%s", err, out)
	}
	return bin, func() { os.RemoveAll(dir) }, nil
}

// measureFindAll runs find-all over n fingerprints (1% planted neighbours
// at distances 0..3, the workload of simhash-cpp's measurement) with the
// design picked for the size, with simhash-cpp's 6 blocks, and the sort-based
// baseline, then find-clusters, each a child process. The find-clusters
// row's Pairs counts clusters (its output lines).
func measureFindAll(cfg Config, bin string, n int) ([]FindAllRow, error) {
	dir, err := os.MkdirTemp("", "simhashdb-findall-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	in := filepath.Join(dir, "fps.txt")
	f, err := os.Create(in)
	if err != nil {
		return nil, err
	}
	w := bufio.NewWriter(f)
	for _, fp := range fingerprints.Planted(n, 3, 0.01, cfg.Seed) {
		w.WriteString(strconv.FormatUint(fp, 10))
		w.WriteByte('\n')
	}
	if err := w.Flush(); err != nil {
		return nil, err
	}
	f.Close()
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	runs := []struct {
		tool string
		cmd  *exec.Cmd
	}{
		{"simhashdb find-all", exec.Command(bin, "find-all", "-d", "3", "-i", in, "-o", filepath.Join(dir, "a.out"))},
		{"simhashdb find-all -b 6", exec.Command(bin, "find-all", "-b", "6", "-d", "3", "-i", in, "-o", filepath.Join(dir, "b.out"))},
		{"baseline: sort 20 tables, set of pairs", exec.Command(self)},
		{"simhashdb find-clusters", exec.Command(bin, "find-clusters", "-d", "3", "-i", in, "-o", filepath.Join(dir, "d.out"))},
	}
	runs[2].cmd.Env = append(os.Environ(), childEnv+"=sortjoin", "SIMHASHDB_BENCH_IN="+in, "SIMHASHDB_BENCH_OUT="+filepath.Join(dir, "c.out"))
	var rows []FindAllRow
	for i, r := range runs {
		var stderr strings.Builder
		r.cmd.Stderr = &stderr
		start := time.Now()
		if err := r.cmd.Start(); err != nil {
			return nil, fmt.Errorf("%s: %w", r.tool, err)
		}
		peak := watchPeak(r.cmd.Process.Pid)
		if err := r.cmd.Wait(); err != nil {
			return nil, fmt.Errorf("%s: %w: %s", r.tool, err, stderr.String())
		}
		row := FindAllRow{N: n, Tool: r.tool, Seconds: time.Since(start).Seconds(), PeakMB: peak()}
		if ru, ok := r.cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
			row.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
		}
		out, err := os.ReadFile(filepath.Join(dir, string(rune('a'+i))+".out"))
		if err != nil {
			return nil, err
		}
		row.Pairs = strings.Count(string(out), "\n")
		cfg.Log.Info("find-all", "n", n, "tool", r.tool, "wall s", fmt.Sprintf("%.2f", row.Seconds), "cpu s", fmt.Sprintf("%.2f", row.CPU),
			"peak MB", fmt.Sprintf("%.0f", row.PeakMB), "pairs", row.Pairs)
		rows = append(rows, row)
	}
	if rows[0].Pairs != rows[1].Pairs || rows[0].Pairs != rows[2].Pairs {
		return nil, fmt.Errorf("find-all at n=%d: the runs disagree: %d, %d and %d pairs", n, rows[0].Pairs, rows[1].Pairs, rows[2].Pairs)
	}
	return rows, nil
}

// watchPeak samples a process's peak resident memory (VmHWM) every 5 ms
// until the returned function is called (after the process ended), which
// returns the largest sample in MB. The kernel's rusage cannot say: a child
// started by this large process inherits its peak.
func watchPeak(pid int) func() float64 {
	var peak atomic.Int64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		path := fmt.Sprintf("/proc/%d/status", pid)
		t := time.NewTicker(5 * time.Millisecond)
		defer t.Stop()
		for {
			if b, err := os.ReadFile(path); err == nil {
				for _, line := range strings.Split(string(b), "\n") {
					if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
						kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
						if kb > peak.Load() {
							peak.Store(kb)
						}
					}
				}
			}
			select {
			case <-done:
				return
			case <-t.C:
			}
		}
	}()
	return func() float64 {
		close(done)
		<-stopped
		return float64(peak.Load()) / 1024
	}
}

// childEnv names the baseline a re-executed bench process runs.
const childEnv = "SIMHASHDB_BENCH_CHILD"

// ChildMain runs a baseline in a child process when the environment asks
// for one (so the kernel measures its CPU and peak memory alone) and
// reports whether it did; the suite's commands call it first.
func ChildMain() bool {
	var err error
	switch os.Getenv(childEnv) {
	case "sortjoin":
		err = sortJoin(os.Getenv("SIMHASHDB_BENCH_IN"), os.Getenv("SIMHASHDB_BENCH_OUT"))
	case "cachecurve":
		err = cacheCurveChild(os.Getenv("SIMHASHDB_BENCH_DB"), os.Getenv("SIMHASHDB_BENCH_CACHE_MB"), os.Getenv("SIMHASHDB_BENCH_OUT"))
	case "disk":
		err = diskChild(os.Getenv("SIMHASHDB_BENCH_JOB"))
	default:
		return false
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, os.Getenv(childEnv)+":", err)
		os.Exit(1)
	}
	return true
}

// sortJoin is the simple way to find all pairs, as simhash-cpp does it:
// for each of the C(6, 3) tables, permute every fingerprint, sort with a
// comparison sort, compare the fingerprints of each run of equal prefixes,
// and keep the pairs in a set, which removes the pairs several tables find.
// Repeated input values pair with themselves, as simhashdb's find-all does.
func sortJoin(in, out string) error {
	b, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var fps []uint64
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		v, err := strconv.ParseUint(line, 10, 64)
		if err != nil {
			return err
		}
		fps = append(fps, v)
	}
	design, err := permutation.Blocks(3, 6)
	if err != nil {
		return err
	}
	pairs := map[[2]uint64]struct{}{}
	perm := make([]uint64, len(fps))
	for t := range design.Tables {
		tb := &design.Tables[t]
		for i, v := range fps {
			perm[i] = tb.Permute(v)
		}
		slices.Sort(perm)
		shift := uint(64 - tb.Prefix)
		for i := range perm {
			for j := i + 1; j < len(perm) && perm[j]>>shift == perm[i]>>shift; j++ {
				if bits.OnesCount64(perm[i]^perm[j]) <= 3 {
					a, b := tb.Unpermute(perm[i]), tb.Unpermute(perm[j])
					pairs[[2]uint64{min(a, b), max(a, b)}] = struct{}{}
				}
			}
		}
	}
	f, err := os.Create(out)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for p := range pairs {
		fmt.Fprintf(w, "[%d, %d]\n", p[0], p[1])
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return f.Close()
}

func (r *BatchResults) report(md *strings.Builder) {
	fmt.Fprintf(md, "## Batch queries and all pairs (k = 3, %d cores)\n\n", r.Cores)
	md.WriteString("QueryBatch against a stored index (warm), the paper's batch mode, beside the same queries asked one at a time with Query on one goroutine. Queries: half within distance 0..3 of a stored fingerprint, half random.\n\n")
	md.WriteString("| stored | queries | cold s | warm s | warm stored M fp/s/core | warm queries/s | one-by-one queries/s (warm) | batch speed-up | matches |\n|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range r.Batch {
		fmt.Fprintf(md, "| %d | %d | %.2f | %.2f | %.1f | %.0f | %.0f | %.1fx | %d |\n", x.Stored, x.Queries, x.ColdSeconds, x.Seconds, x.StoredPerSecPerCore/1e6,
			x.QueriesPerSec, x.OneByOnePerSec, x.QueriesPerSec/x.OneByOnePerSec, x.Matches)
	}
	fmt.Fprintf(md, "\n`DB.FindAll(3)` over the same stored index of %d fingerprints (every pair of documents, read from the compressed tables): %.2f s, %d pairs.\n", r.FindAllDB.Stored, r.FindAllDB.Seconds, r.FindAllDB.Pairs)
	md.WriteString("\n### find-all (each run a child process: wall and CPU time from the kernel, peak RSS sampled from /proc every 5 ms)\n\n")
	md.WriteString("Input: n decimal fingerprints, 1% with planted neighbours at distances 0..3; distance 3. The baseline sorts 20 permuted tables (6 blocks, as simhash-cpp) with a comparison sort and keeps a hash set of pairs.\n\n")
	md.WriteString("find-clusters prints one line per cluster (connected component of the pairs, with union-find); its row counts clusters, not pairs.\n\n")
	md.WriteString("| n | tool | wall s | CPU s | peak RSS MB | pairs | CPU vs baseline |\n|---:|---|---:|---:|---:|---:|---:|\n")
	base := map[int]float64{}
	for _, x := range r.FindAll {
		if strings.HasPrefix(x.Tool, "baseline") {
			base[x.N] = x.CPU
		}
	}
	for _, x := range r.FindAll {
		fmt.Fprintf(md, "| %d | %s | %.2f | %.2f | %.0f | %d | %.2fx |\n", x.N, x.Tool, x.Seconds, x.CPU, x.PeakMB, x.Pairs, x.CPU/cmp.Or(base[x.N], x.CPU))
	}
	md.WriteString("\n")
}
