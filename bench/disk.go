package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/simhashdb/simhashdb/bench/chart"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/directio"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/simhashdb/simhashdb/internal/memhold"
	"github.com/simhashdb/simhashdb/permutation"
)

// The disk section measures queries on an index larger than the memory the
// process may use: the index is built once, then a child process queries
// it from inside a memory cgroup (where one can be made) after the index's
// pages were dropped from the page cache, so that what the engine's cache
// misses is read from the disk. The disk's own limit is measured in the
// same run: random 4 KiB reads that bypass the page cache (O_DIRECT), one
// at a time and T together, T the index's tables. With --engine-tables it
// does all that once for each table design.

// DiskResults is the disk section of a run, for one table design.
type DiskResults struct {
	N      int    `json:"n"`
	Design string `json:"design"` // "optimiser", or "paper-T" (permutation.Paper)
	Tables int    `json:"tables"`
	// DiskDesign is whether the design is the one `--design disk`
	// (permutation.ForDisk at k = 3 and N) picks at this size.
	DiskDesign  bool   `json:"disk_design"`
	IndexBytes  int64  `json:"index_bytes"`
	CacheMiB    int    `json:"cache_mib"`
	MemLimitMiB int    `json:"memory_limit_mib"`
	PageCache   string `json:"page_cache"` // how the page cache was kept out
	// Disk is the disk's limit: random 4 KiB reads.
	Disk DiskLimit `json:"disk"`
	Runs []DiskRun `json:"runs"`
	// Kinds are runs of one kind of query each (DiskRun.Kind).
	Kinds []DiskRun `json:"kinds,omitempty"`
	// Fingerprints are runs of the same queries asking for the
	// fingerprints alone (engine.DB.QueryFingerprints), read direct, one
	// and 16 at a time: the tables' reads without the documents'.
	Fingerprints []DiskRun `json:"fingerprints,omitempty"`
	Charts       []string  `json:"charts"`
	// PairedRounds is how many rounds each run's own round (DiskRun.Round)
	// was timed over.
	PairedRounds int `json:"paired_rounds"`
}

// DiskLimit is what the disk does with random 4 KiB reads of the index's
// files, the page cache bypassed.
type DiskLimit struct {
	One     Latency `json:"one"` // one read at a time
	RoundOf int     `json:"round_of"`
	// Round is T reads issued together by T goroutines, each with its
	// own pread, until the last is back: a Go program's way of reading.
	Round    Latency `json:"round"`
	IOPSOne  float64 `json:"iops_one"`      // one read in flight
	IOPSMany float64 `json:"iops_in_round"` // RoundOf reads in flight
	// Async is T reads submitted to the kernel in one call and reaped
	// together (Linux AIO, as fio's libaio engine does): the disk's own
	// round, the limit queries are measured against.
	Async     Latency `json:"async_round"`
	IOPSAsync float64 `json:"iops_async_round"`
	// AsyncSubmitUs is the mean time of an Async round in its io_submit:
	// the kernel's work for each read and one notification of the device.
	AsyncSubmitUs float64 `json:"async_round_submit_us"`
}

// Latency is a distribution's percentiles and mean, in microseconds.
type Latency struct {
	P50  float64 `json:"p50_us"`
	P99  float64 `json:"p99_us"`
	P999 float64 `json:"p999_us"`
	Mean float64 `json:"mean_us,omitempty"`
}

// DiskRun is the queries at one concurrency.
type DiskRun struct {
	Concurrency int     `json:"concurrency"`
	Queries     int     `json:"queries"`
	Latency     Latency `json:"latency"`
	QPS         float64 `json:"queries_per_s"`
	// Reads is how the index read its files: "ring" (io_uring), "direct"
	// (io_uring, engine.ReadsDirect) or "pread"
	// (engine.ReadsBlocking, or no io_uring here).
	Reads string `json:"reads"`
	// ReadsPerQuery is the index's reads of stored blocks (Stats.FileReads)
	// and BytesPerQuery the bytes the child fetched from the disk
	// (/proc/self/io), a query.
	ReadsPerQuery float64 `json:"reads_per_query"`
	// RoundsPerQuery is the rounds those reads came in (Stats.FileReadRounds:
	// chains of reads each started after the one before had finished), a
	// query: with one query at a time, the rounds it waits for one after
	// another.
	RoundsPerQuery float64 `json:"read_rounds_per_query"`
	BytesPerQuery  float64 `json:"disk_bytes_per_query"`
	// Kind is the queries' kind in a run of one kind: near (a stored
	// fingerprint within k) or random.
	Kind string `json:"kind,omitempty"`
	// Answer is "fingerprints" for a run that asked for them alone
	// (diskJob.Fingerprints); empty, the documents.
	Answer string `json:"answer,omitempty"`
	// AutoReads is how the default (engine.ReadsAuto) reads the index in
	// the same memory limit, as Reads names it.
	AutoReads string `json:"auto_reads"`
	// Round is the disk's round (DiskLimit.Async) measured again just
	// before this run, and RoundIOPS its reads/s: the run's ratios are to
	// it, so that a machine whose disk slows or speeds up between runs
	// moves both sides of a ratio.
	Round     Latency `json:"async_round_before"`
	RoundIOPS float64 `json:"iops_async_round_before"`
	// Between is the disk's round timed before every query of a run one
	// at a time (diskJob.RoundOf), by the child between its queries, and
	// BetweenIOPS its reads/s: such a run's ratios are to it, the disk as
	// it was while the queries ran, not in the second before.
	Between     Latency `json:"async_round_between,omitzero"`
	BetweenIOPS float64 `json:"iops_async_round_between,omitempty"`
	// PeakRSS is the child's peak resident memory, in its memory cgroup.
	PeakRSS int64 `json:"peak_rss_bytes,omitempty"`
	// SubmitsPerQuery, SubmitUs and WaitUs are the index's ring's system
	// calls that entered reads, the time in them and the time it waited
	// for completions, a query (engine.Stats.ReadSubmits, ReadSubmitTime,
	// ReadWaitTime): with one query at a time, the rest of Latency.Mean is
	// the engine's processor and its reads the page cache answered.
	SubmitsPerQuery float64 `json:"read_submits_per_query,omitempty"`
	SubmitUs        float64 `json:"read_submit_us_per_query,omitempty"`
	WaitUs          float64 `json:"read_wait_us_per_query,omitempty"`
}

// label names how r read the index, and what it asked if not the
// documents.
func (r DiskRun) label() string {
	if r.Answer == "fingerprints" {
		return r.Reads + ", fingerprints alone"
	}
	return r.Reads
}

// roundOf returns the round a run's ratios are to: the one timed between
// its queries, the one timed just before it, or the section's.
func (d *DiskResults) roundOf(r DiskRun) (Latency, float64) {
	if r.Between.P50 > 0 && r.BetweenIOPS > 0 {
		return r.Between, r.BetweenIOPS
	}
	if r.Round.P50 > 0 && r.RoundIOPS > 0 {
		return r.Round, r.RoundIOPS
	}
	return d.Disk.Async, d.Disk.IOPSAsync
}

// diskJob is what the child does.
type diskJob struct {
	Index       string `json:"index"`
	Queries     string `json:"queries"` // a file of 8-byte little-endian fingerprints
	CacheMiB    int    `json:"cache_mib"`
	Concurrency int    `json:"concurrency"`
	Reads       string `json:"reads"` // engine.Options.Reads, by name
	// RoundOf, if not 0, has a run one at a time time a round of that many
	// reads of the index's sstables before each query (DiskRun.Between).
	RoundOf int `json:"round_of,omitempty"`
	// Fingerprints asks for the fingerprints alone (QueryFingerprints),
	// not the documents (Query).
	Fingerprints bool `json:"fingerprints,omitempty"`
}

// asker returns a function that asks one of j's queries of db at distance
// k, the way j says.
func (j diskJob) asker(db *engine.DB, k int) asker {
	if j.Fingerprints {
		return askFingerprints(db, k)
	}
	return askDocuments(db, k)
}

// diskWays are the ways the disk section reads the index, each in runs of
// its own: through the ring, through it with O_DIRECT, with pread.
var diskWays = []string{"ring", "direct", "pread"}

// reading returns j reading the index the given way.
func (j diskJob) reading(way string) diskJob {
	j.Reads = map[string]string{"ring": engine.ReadsBuffered.String(), "direct": engine.ReadsDirect.String(), "pread": engine.ReadsBlocking.String()}[way]
	return j
}

// diskConfig sizes the disk section: its corpus, the child's memory limit
// and the queries of each run.
func diskConfig(cfg Config) (n, memMiB, queries int) {
	n, memMiB, queries = 30_000_000, 256, 20_000
	if len(cfg.EngineSizes) > 0 {
		n = cfg.EngineSizes[0]
		if n >= 100_000_000 {
			memMiB = 1024
		}
	}
	if cfg.Quick {
		n, memMiB, queries = 200_000, 256, 2_000
	}
	return n, memMiB, queries
}

func runDisk(cfg Config) ([]*DiskResults, error) {
	designs := cfg.EngineTables
	if len(designs) == 0 {
		designs = []int{0}
	}
	var all []*DiskResults
	for _, tables := range designs {
		res, err := runDiskDesign(cfg, tables)
		if err != nil {
			return nil, err
		}
		all = append(all, res)
	}
	return all, nil
}

// runDiskDesign is the disk section for one design: the optimiser's (0)
// or the paper's of that many tables.
func runDiskDesign(cfg Config, paperTables int) (*DiskResults, error) {
	n, memMiB, nq := diskConfig(cfg)
	name, design, err := paperDesign(paperTables)
	if err != nil {
		return nil, err
	}
	res := &DiskResults{N: n, Design: name, CacheMiB: 32, MemLimitMiB: memMiB}
	dir, err := os.MkdirTemp("", "simhashdb-disk-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	index := filepath.Join(dir, "index")
	start := time.Now()
	built, queries, err := buildDiskIndex(index, n, nq, cfg.Seed, design)
	if err != nil {
		return nil, err
	}
	tables := len(built.Tables)
	res.Tables = tables
	if forDisk, err := permutation.ForDisk(3, n); err == nil {
		res.DiskDesign = built.Equal(forDisk)
	}
	res.IndexBytes = dirBytes(index)
	cfg.Log.Info("disk: index built", "n", n, "tables", tables, "bytes", res.IndexBytes, "s", fmt.Sprintf("%.0f", time.Since(start).Seconds()))
	qpath := filepath.Join(dir, "queries")
	if err := writeQueries(qpath, queries); err != nil {
		return nil, err
	}
	files, err := indexFiles(index)
	if err != nil {
		return nil, err
	}
	// The disk's round, timed once here and again before each run (for
	// the run's ratios).
	paired, err := newPairedRound(files, tables)
	if err != nil {
		return nil, fmt.Errorf("measuring the disk: %w", err)
	}
	defer paired.Close()
	if res.Disk, err = measureDisk(paired, cfg.Quick); err != nil {
		return nil, fmt.Errorf("measuring the disk: %w", err)
	}
	res.PairedRounds = pairedRounds
	if cfg.Quick {
		res.PairedRounds /= 10
	}
	query := func(job diskJob) (DiskRun, string, error) {
		round, iops, err := paired.measure(res.PairedRounds)
		if err != nil {
			return DiskRun{}, "", fmt.Errorf("measuring the disk: %w", err)
		}
		job.RoundOf = tables
		run, how, err := queryFromChild(job, files, memMiB)
		run.Round, run.RoundIOPS = round, iops
		return run, how, err
	}
	cfg.Log.Info("disk: random 4 KiB reads", "one p50 us", res.Disk.One.P50, "goroutine round p50 us", res.Disk.Round.P50, "async round p50 us", res.Disk.Async.P50, "async iops", res.Disk.IOPSAsync)
	// Every way of reading, in the same run.
	for _, way := range diskWays {
		for _, conc := range []int{1, 16} {
			run, how, err := query(diskJob{Index: index, Queries: qpath, CacheMiB: res.CacheMiB, Concurrency: conc}.reading(way))
			if err != nil {
				return nil, fmt.Errorf("queries at concurrency %d: %w", conc, err)
			}
			res.PageCache = how
			cfg.Log.Info("disk: queries", "reads", run.Reads, "concurrency", conc, "p50 us", run.Latency.P50, "p99 us", run.Latency.P99, "qps", run.QPS, "reads/query", run.ReadsPerQuery, "rounds/query", run.RoundsPerQuery)
			res.Runs = append(res.Runs, run)
		}
	}
	// The same queries asking for the fingerprints alone.
	for _, conc := range []int{1, 16} {
		run, _, err := query(diskJob{Index: index, Queries: qpath, CacheMiB: res.CacheMiB, Concurrency: conc, Fingerprints: true}.reading("direct"))
		if err != nil {
			return nil, fmt.Errorf("fingerprints alone at concurrency %d: %w", conc, err)
		}
		cfg.Log.Info("disk: fingerprints alone", "reads", run.Reads, "concurrency", conc, "p50 us", run.Latency.P50, "p99 us", run.Latency.P99, "reads/query", run.ReadsPerQuery, "rounds/query", run.RoundsPerQuery)
		res.Fingerprints = append(res.Fingerprints, run)
	}
	// The queries by kind, each kind in a cold run of its own (one at a
	// time, buffered and direct through the ring): those near a stored fingerprint (every other
	// query, which finds it) and the random ones (which find none at this
	// size).
	for _, kw := range [][2]string{{"near", "ring"}, {"random", "ring"}, {"near", "direct"}, {"random", "direct"}} {
		kind, way := kw[0], kw[1]
		var some []uint64
		for i, q := range queries {
			if (i%2 == 0) == (kind == "near") {
				some = append(some, q)
			}
		}
		path := filepath.Join(dir, "queries-"+kind)
		if err := writeQueries(path, some); err != nil {
			return nil, err
		}
		run, _, err := query(diskJob{Index: index, Queries: path, CacheMiB: res.CacheMiB, Concurrency: 1}.reading(way))
		if err != nil {
			return nil, fmt.Errorf("%s queries: %w", kind, err)
		}
		run.Kind = kind
		cfg.Log.Info("disk: queries", "kind", kind, "reads", run.Reads, "p50 us", run.Latency.P50, "reads/query", run.ReadsPerQuery, "rounds/query", run.RoundsPerQuery)
		res.Kinds = append(res.Kinds, run)
	}
	return res, res.chart(cfg.Out)
}

// chart draws the queries' latency percentiles beside the disk's: one read,
// and a round of T together, as the kernel and as goroutines issue it.
func (d *DiskResults) chart(out string) error {
	xs := []float64{1, 2, 3} // p50, p99, p999
	pts := func(l Latency) []float64 { return []float64{l.P50, l.P99, l.P999} }
	series := []chart.Series{
		{Name: "the disk: one 4 KiB read", X: xs, Y: pts(d.Disk.One), Dashed: true},
		{Name: fmt.Sprintf("the disk: %d reads submitted together", d.Disk.RoundOf), X: xs, Y: pts(d.Disk.Async), Dashed: true},
		{Name: fmt.Sprintf("%d goroutines, a read each", d.Disk.RoundOf), X: xs, Y: pts(d.Disk.Round), Dashed: true},
	}
	for _, r := range d.Runs {
		series = append(series, chart.Series{Name: fmt.Sprintf("a query, %d at a time, %s", r.Concurrency, r.Reads), X: xs, Y: pts(r.Latency)})
	}
	name := fmt.Sprintf("disk-latency-%d-%s.png", d.N, d.Design)
	if err := chart.Lines(filepath.Join(out, name), chart.Axes{Title: fmt.Sprintf("Cold queries on the disk, %d fingerprints, %d tables, %d MiB cache", d.N, d.Tables, d.CacheMiB),
		X: "percentile: 1 = p50, 2 = p99, 3 = p99.9", Y: "microseconds", LogY: true, LegendTop: true, LegendLeft: true}, series); err != nil {
		return err
	}
	d.Charts = append(d.Charts, name)
	return nil
}

// buildDiskIndex bulk-loads n uniform fingerprints into a new index at dir
// and returns its design and nq queries: half within distance 0..3 of a
// stored fingerprint, half random (fingerprints.Queries' mix).
func buildDiskIndex(dir string, n, nq int, seed uint64, design *permutation.Design) (*permutation.Design, []uint64, error) {
	fps := fingerprints.Uniform(n, seed)
	queries := fingerprints.Queries(fps, nq, seed+1)
	db, err := engine.Open(dir, engine.Options{SizeHint: int64(n), Design: design, Sync: engine.SyncNone, Logger: quiet()})
	if err != nil {
		return nil, nil, err
	}
	docs := make([]engine.Doc, len(fps))
	for i, fp := range fps {
		docs[i] = engine.Doc{ID: uint64(i), Fingerprint: fp}
	}
	fps = nil
	if err := db.Load(context.Background(), engine.DocsOf(docs)); err != nil {
		db.Close()
		return nil, nil, err
	}
	built := db.Design()
	return built, queries, db.Close()
}

// indexFiles lists the files of the index at dir, largest first.
func indexFiles(dir string) ([]string, error) {
	var files []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			files = append(files, p)
		}
		return err
	})
	slices.SortFunc(files, func(a, b string) int { return cmp.Compare(fileSize(b), fileSize(a)) })
	return files, err
}

func fileSize(p string) int64 {
	if fi, err := os.Stat(p); err == nil {
		return fi.Size()
	}
	return 0
}

func dirBytes(dir string) int64 {
	files, _ := indexFiles(dir)
	var n int64
	for _, f := range files {
		n += fileSize(f)
	}
	return n
}

// measureDisk reads random 4 KiB blocks of the index's sstables with the
// page cache bypassed, through p's reader: one at a time, and rounds of
// p's t issued together, by goroutines and submitted to the kernel.
func measureDisk(p *pairedRound, quick bool) (DiskLimit, error) {
	r, t := p.r, p.t
	rounds := 2000
	if quick {
		rounds = 200
	}
	rng := rand.New(rand.NewPCG(7, 7))
	one := make([]float64, 0, rounds)
	start := time.Now()
	for range rounds {
		t0 := time.Now()
		if err := r.readRandom(rng, 0); err != nil {
			return DiskLimit{}, err
		}
		one = append(one, float64(time.Since(t0).Microseconds()))
	}
	lim := DiskLimit{One: percentiles(one), RoundOf: t, IOPSOne: float64(rounds) / time.Since(start).Seconds()}
	// Rounds of t reads: t goroutines, each with its own buffer, released
	// together and waited for together.
	round := make([]float64, 0, rounds)
	var wg sync.WaitGroup
	errs := make([]error, t)
	seeds := make([]*rand.Rand, t)
	for i := range seeds {
		seeds[i] = rand.New(rand.NewPCG(uint64(i), 9))
	}
	start = time.Now()
	for range rounds {
		t0 := time.Now()
		wg.Add(t)
		for i := range t {
			go func() {
				defer wg.Done()
				if err := r.readRandom(seeds[i], i+1); err != nil {
					errs[i] = err
				}
			}()
		}
		wg.Wait()
		round = append(round, float64(time.Since(t0).Microseconds()))
	}
	lim.IOPSMany = float64(rounds*t) / time.Since(start).Seconds()
	lim.Round = percentiles(round)
	if err := errors.Join(errs...); err != nil {
		return lim, err
	}
	var err error
	lim.Async, lim.IOPSAsync, err = p.measure(rounds)
	lim.AsyncSubmitUs = float64(p.a.submitMean().Nanoseconds()) / 1e3
	return lim, err
}

// pairedRounds is how many rounds are timed before each run: a second or
// less of the disk.
const pairedRounds = 1000

// pairedRound times the disk's round: once for the section, and again
// before each run of queries.
type pairedRound struct {
	r     *directReader
	a     *aioReader
	t     int
	seeds []*rand.Rand
}

// newPairedRound readies rounds of t reads of the index's sstables.
func newPairedRound(files []string, t int) (*pairedRound, error) {
	ssts := indexSSTs(files)
	if len(ssts) == 0 {
		return nil, errors.New("the index has no sstable of 1 MiB or more to read")
	}
	r, err := newDirectReader(ssts, t+1)
	if err != nil {
		return nil, err
	}
	a, err := newAIOReader(r)
	if err != nil {
		r.Close()
		return nil, err
	}
	p := &pairedRound{r: r, a: a, t: t}
	for i := range t {
		p.seeds = append(p.seeds, rand.New(rand.NewPCG(uint64(i), 11)))
	}
	return p, nil
}

// measure times rounds of t reads submitted together.
func (p *pairedRound) measure(rounds int) (Latency, float64, error) {
	us := make([]float64, 0, rounds)
	start := time.Now()
	for range rounds {
		took, err := p.once()
		if err != nil {
			return Latency{}, 0, err
		}
		us = append(us, float64(took.Microseconds()))
	}
	return percentiles(us), float64(rounds*p.t) / time.Since(start).Seconds(), nil
}

// once times one round of t reads submitted together.
func (p *pairedRound) once() (time.Duration, error) {
	t0 := time.Now()
	err := p.a.round(p.seeds, p.t)
	return time.Since(t0), err
}

func (p *pairedRound) Close() {
	p.a.Close()
	p.r.Close()
}

// indexSSTs returns the index's sstables of 1 MiB or more: what the disk's
// reads are timed on.
func indexSSTs(files []string) []string {
	var ssts []string
	for _, f := range files {
		if strings.HasSuffix(f, ".sst") && fileSize(f) >= 1<<20 {
			ssts = append(ssts, f)
		}
	}
	return ssts
}

// percentiles summarises latencies in microseconds (sorted here).
func percentiles(us []float64) Latency {
	if len(us) == 0 {
		return Latency{}
	}
	slices.Sort(us)
	sum := 0.0
	for _, v := range us {
		sum += v
	}
	return Latency{P50: pct(us, 0.5), P99: pct(us, 0.99), P999: pct(us, 0.999), Mean: sum / float64(len(us))}
}

// queryFromChild runs a job in a child process of this binary, inside a
// memory cgroup of memMiB where one can be made, after the index's pages
// were dropped from the page cache, and returns its run and how the page
// cache was kept out.
func queryFromChild(job diskJob, files []string, memMiB int) (DiskRun, string, error) {
	exe, err := os.Executable()
	if err != nil {
		return DiskRun{}, "", err
	}
	js, _ := json.Marshal(job)
	cmd := exec.Command(exe)
	cmd.Env = append(os.Environ(), childEnv+"=disk", "SIMHASHDB_BENCH_JOB="+string(js))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return DiskRun{}, "", err
	}
	var out strings.Builder
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		return DiskRun{}, "", err
	}
	how := fmt.Sprintf("a memory cgroup of %d MiB, the index's pages dropped before the run", memMiB)
	cleanup, err := limitMemory(cmd.Process.Pid, int64(memMiB)<<20)
	if err != nil {
		how = "no memory cgroup (" + err.Error() + "): the index's pages dropped before the run only, so the page cache warms during it"
	}
	defer cleanup()
	for _, f := range files {
		if err := directio.Drop(f); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			return DiskRun{}, "", err
		}
	}
	fmt.Fprintln(stdin, "go")
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		return DiskRun{}, "", fmt.Errorf("child: %w", err)
	}
	var run DiskRun
	if err := json.Unmarshal([]byte(out.String()), &run); err != nil {
		return DiskRun{}, "", fmt.Errorf("child's answer %q: %w", out.String(), err)
	}
	return run, how, nil
}

// diskChild is the disk section's child (ChildMain): it waits until the
// parent has put it in its cgroup and dropped the index's pages, runs the
// job (JSON) and prints its run as JSON.
func diskChild(js string) error {
	var job diskJob
	if err := json.Unmarshal([]byte(js), &job); err != nil {
		return err
	}
	bufio.NewReader(os.Stdin).ReadString('\n')
	run, err := queryDisk(job)
	if err != nil {
		return err
	}
	b, err := json.Marshal(run)
	if err != nil {
		return err
	}
	_, err = fmt.Println(string(b))
	return err
}

// queryDisk opens the index read-only with a cache of job.CacheMiB and asks
// every query of job.Queries, job.Concurrency at a time; then it notes how
// the default would read the index (DiskRun.AutoReads).
func queryDisk(job diskJob) (DiskRun, error) {
	qs, err := readQueries(job.Queries)
	if err != nil {
		return DiskRun{}, err
	}
	mode, err := engine.ParseReadMode(job.Reads)
	if err != nil {
		return DiskRun{}, err
	}
	run, err := queryDiskWith(job, qs, mode)
	if err != nil {
		return DiskRun{}, err
	}
	// What the default would read the index as, here: opened after the
	// run, as it reads blocks too.
	db, err := engine.Open(job.Index, engine.Options{ReadOnly: true, CacheSize: int64(job.CacheMiB) << 20, Logger: quiet()})
	if err != nil {
		return DiskRun{}, err
	}
	st, err := db.Stats(context.Background())
	run.AutoReads = readsOf(st)
	return run, errors.Join(err, db.Close())
}

// queryDiskWith asks qs of job's index opened read-only with mode.
func queryDiskWith(job diskJob, qs []uint64, mode engine.ReadMode) (DiskRun, error) {
	db, err := engine.Open(job.Index, engine.Options{ReadOnly: true, CacheSize: int64(job.CacheMiB) << 20, Logger: quiet(), Reads: mode})
	if err != nil {
		return DiskRun{}, err
	}
	defer db.Close()
	// As a command that opens an index holds its process: without the Go
	// heap's soft limit, queries 16 at a time could grow the heap past
	// the child's cgroup, which then kills it.
	memhold.HoldProcess()
	st0, err := db.Stats(context.Background())
	if err != nil {
		return DiskRun{}, err
	}
	var run DiskRun
	if job.Fingerprints {
		run.Answer = "fingerprints"
	}
	io0 := procIO()
	var lat, rounds []float64
	var elapsed time.Duration
	if job.Concurrency == 1 && job.RoundOf > 0 {
		var roundsTook time.Duration
		lat, rounds, elapsed, roundsTook, err = latenciesBetween(db, qs, 3, job)
		if len(rounds) > 0 {
			run.Between, run.BetweenIOPS = percentiles(rounds), float64(len(rounds)*job.RoundOf)/roundsTook.Seconds()
		}
	} else {
		lat, elapsed, err = latenciesWith(qs, job.Concurrency, func() asker { return job.asker(db, 3) })
	}
	if err != nil {
		return DiskRun{}, err
	}
	// The process's disk bytes include the rounds': theirs are taken off.
	io1 := procIO()
	st1, err := db.Stats(context.Background())
	if err != nil {
		return DiskRun{}, err
	}
	nq := float64(len(qs))
	roundBytes := float64(len(rounds) * job.RoundOf * directio.Align)
	run.Concurrency, run.Queries, run.Latency, run.QPS, run.Reads = job.Concurrency, len(qs), percentiles(lat), nq/elapsed.Seconds(), readsOf(st1)
	run.ReadsPerQuery, run.RoundsPerQuery = float64(st1.FileReads-st0.FileReads)/nq, float64(st1.FileReadRounds-st0.FileReadRounds)/nq
	run.BytesPerQuery = (float64(io1["read_bytes"]-io0["read_bytes"]) - roundBytes) / nq
	run.PeakRSS = peakRSS()
	run.SubmitsPerQuery = float64(st1.ReadSubmits-st0.ReadSubmits) / nq
	run.SubmitUs = float64((st1.ReadSubmitTime - st0.ReadSubmitTime).Nanoseconds()) / 1e3 / nq
	run.WaitUs = float64((st1.ReadWaitTime - st0.ReadWaitTime).Nanoseconds()) / 1e3 / nq
	return run, nil
}

// latenciesBetween asks job's queries qs of db at distance k one at a
// time, timing a round of job.RoundOf reads of the index's sstables before
// each: the queries' latencies and the rounds', in microseconds, and the
// time each took in all. The rounds read with O_DIRECT, so the queries
// stay as cold as without them.
func latenciesBetween(db *engine.DB, qs []uint64, k int, job diskJob) (lat, rounds []float64, queriesTook, roundsTook time.Duration, err error) {
	files, err := indexFiles(job.Index)
	if err != nil {
		return nil, nil, 0, 0, err
	}
	p, err := newPairedRound(files, job.RoundOf)
	if err != nil {
		return nil, nil, 0, 0, fmt.Errorf("timing the disk's round between queries: %w", err)
	}
	defer p.Close()
	ctx := context.Background()
	lat, rounds = make([]float64, 0, len(qs)), make([]float64, 0, len(qs))
	ask := job.asker(db, k)
	for _, q := range qs {
		took, err := p.once()
		if err != nil {
			return nil, nil, 0, 0, fmt.Errorf("timing the disk's round between queries: %w", err)
		}
		rounds, roundsTook = append(rounds, float64(took.Nanoseconds())/1e3), roundsTook+took
		t0 := time.Now()
		err = ask(ctx, q)
		took = time.Since(t0)
		if err != nil {
			return nil, nil, 0, 0, err
		}
		lat, queriesTook = append(lat, float64(took.Nanoseconds())/1e3), queriesTook+took
	}
	return lat, rounds, queriesTook, roundsTook, nil
}

// readsOf names how an index reads its files (DiskRun.Reads).
func readsOf(st engine.Stats) string {
	switch {
	case st.ReadDirect:
		return "direct"
	case st.ReadRing:
		return "ring"
	}
	return "pread"
}

// peakRange is the least and the most PeakRSS of runs that have one.
func peakRange(runs []DiskRun) (lo, hi int64) {
	for _, r := range runs {
		if r.PeakRSS > 0 {
			if lo == 0 || r.PeakRSS < lo {
				lo = r.PeakRSS
			}
			hi = max(hi, r.PeakRSS)
		}
	}
	return lo, hi
}

// procIO reads this process's I/O counters (Linux's /proc/self/io; empty
// elsewhere).
func procIO() map[string]int64 { return procFields("/proc/self/io") }

// peakRSS is this process's peak resident memory in bytes (VmHWM in
// Linux's /proc/self/status; 0 elsewhere).
func peakRSS() int64 { return procFields("/proc/self/status")["VmHWM"] << 10 }

// procFields reads a /proc file of "name: number [unit]" lines.
func procFields(path string) map[string]int64 {
	m := map[string]int64{}
	b, err := os.ReadFile(path)
	if err != nil {
		return m
	}
	for _, line := range strings.Split(string(b), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok {
			if f := strings.Fields(v); len(f) > 0 {
				if n, err := strconv.ParseInt(f[0], 10, 64); err == nil {
					m[k] = n
				}
			}
		}
	}
	return m
}

func (d *DiskResults) report(md *strings.Builder) {
	fmt.Fprintf(md, "## Queries on the disk (%d fingerprints, %d tables: %s design)\n\n", d.N, d.Tables, d.Design)
	if d.DiskDesign {
		md.WriteString("At this size `--design disk` (`permutation.ForDisk`) picks this design. ")
	} else {
		md.WriteString("At this size `--design disk` (`permutation.ForDisk`) picks another design. ")
	}
	fmt.Fprintf(md, "An index of %d uniform fingerprints (%.1f GB on disk) queried at k = 3 (half near a stored fingerprint, half random) by a child process with a %d MiB engine cache; page cache: %s. ", d.N, float64(d.IndexBytes)/1e9, d.CacheMiB, d.PageCache)
	fmt.Fprintf(md, "The disk's limit, measured in the same run on the index's sstables with O_DIRECT: one random 4 KiB read p50 %.0f us, p99 %.0f us (%.0f reads/s); "+
		"%d submitted to the kernel together (Linux AIO, one io_submit, reaped together), all back p50 %.0f us, p99 %.0f us (%.0f reads/s; a round's mean in its io_submit, the kernel's work for each read and one notification of the device: %.0f us): **the round**, timed again (%d rounds) just before each run below, and in a run one at a time once before every query, between the queries: a run's ratios are to the rounds between its queries where it has them, else to those before it; "+
		"%d issued together by as many goroutines, each a pread, p50 %.0f us, p99 %.0f us (%.0f reads/s).\n\n",
		d.Disk.One.P50, d.Disk.One.P99, d.Disk.IOPSOne, d.Disk.RoundOf, d.Disk.Async.P50, d.Disk.Async.P99, d.Disk.IOPSAsync, d.Disk.AsyncSubmitUs, d.PairedRounds,
		d.Disk.RoundOf, d.Disk.Round.P50, d.Disk.Round.P99, d.Disk.IOPSMany)
	if len(d.Runs) > 0 {
		fmt.Fprintf(md, "The default (`engine.Options.Reads` auto, as `query --db` and `serve --read-only` open an index) reads this index, in the child's memory limit, as **%s**.\n\n", d.Runs[0].AutoReads)
	}
	md.WriteString("| reads | concurrent queries | p50 | p99 | p999 | queries/s | reads a query | rounds of reads a query (one query at a time: rounds it waits for) | disk bytes a query | the round (between the queries, else just before the run), p50 / p99 | p50 / that round | p99 / that round's p99 | p50 / goroutine round | queries/s / (that round's reads/s / reads a query) |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range slices.Concat(d.Runs, d.Fingerprints) {
		round, iops := d.roundOf(r)
		limit := 0.0
		if r.ReadsPerQuery > 0 {
			limit = r.QPS / (iops / r.ReadsPerQuery)
		}
		fmt.Fprintf(md, "| %s | %d | %.0f us | %.0f us | %.0f us | %.0f | %.1f | %.1f | %.0f | %.0f / %.0f us | %.1fx | %.1fx | %.1fx | %.2f |\n", r.label(), r.Concurrency, r.Latency.P50, r.Latency.P99, r.Latency.P999, r.QPS,
			r.ReadsPerQuery, r.RoundsPerQuery, r.BytesPerQuery, round.P50, round.P99, r.Latency.P50/max(round.P50, 1), r.Latency.P99/max(round.P99, 1), r.Latency.P50/max(d.Disk.Round.P50, 1), limit)
	}
	md.WriteString("\n")
	if len(d.Fingerprints) > 0 {
		md.WriteString("Rows \"fingerprints alone\": the same queries asking `QueryFingerprints`, which the tables answer without the documents (their postings: a third of the near queries' matches lie outside the postings the query reads with its table blocks, and wait for a second round).\n\n")
	}
	if lo, hi := peakRange(slices.Concat(d.Runs, d.Fingerprints, d.Kinds)); hi > 0 {
		fmt.Fprintf(md, "The child's peak resident memory over these runs: %.0f-%.0f MB.\n\n", float64(lo)/1e6, float64(hi)/1e6)
	}
	for _, r := range d.Kinds {
		round, _ := d.roundOf(r)
		which := "between its queries"
		if r.Between.P50 == 0 {
			which = "before it"
		}
		fmt.Fprintf(md, "- The %s queries alone, a cold run of their own (%s, one at a time): p50 %.0f us (%.1fx the round %s, %.0f us), p99 %.0f us, %.1f reads in %.1f rounds a query.\n",
			r.Kind, r.Reads, r.Latency.P50, r.Latency.P50/max(round.P50, 1), which, round.P50, r.Latency.P99, r.ReadsPerQuery, r.RoundsPerQuery)
	}
	for _, r := range slices.Concat(d.Runs, d.Fingerprints, d.Kinds) {
		if r.Concurrency != 1 || r.SubmitsPerQuery == 0 {
			continue
		}
		kind := "the"
		if r.Kind != "" {
			kind = "the " + r.Kind
		}
		fmt.Fprintf(md, "- Where %s queries' time goes (%s, one at a time, means): %.0f us a query; %.0f us in the system calls that submit its reads (%.2f a query), %.0f us waiting for them; the rest, %.0f us, the engine's processor and its reads the page cache answered.\n",
			kind, r.label(), r.Latency.Mean, r.SubmitUs, r.SubmitsPerQuery, r.WaitUs, r.Latency.Mean-r.SubmitUs-r.WaitUs)
	}
	if len(d.Kinds) > 0 || len(d.Runs) > 0 {
		md.WriteString("\n")
	}
	for _, ch := range d.Charts {
		fmt.Fprintf(md, "![%s](%s)\n\n", ch, ch)
	}
}
