// Package jobs runs simhashdb-beam's jobs: each builds its pipelines from
// package neardup's transforms, runs them on a Beam runner and reports what
// the counters say. The command is its flags; the tests call these.
package jobs

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"syscall"
	"time"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem"

	// The file systems inputs and outputs may be on.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/gcs"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/local"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/io/filesystem/s3"

	// The runners --runner may name.
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/dataflow"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/flink"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/prism"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/spark"
	_ "github.com/apache/beam/sdks/v2/go/pkg/beam/runners/universal"

	"github.com/simhashdb/simhashdb/beam/neardup"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/simhash"
)

// ErrUsage wraps errors in a Config.
var ErrUsage = errors.New("usage")

// Config is a job's settings; the zero value of each is its default.
type Config struct {
	Runner   string // a Beam runner: prism (the default), dataflow, flink, spark, universal
	Input    string // a glob of input files
	Output   string // the output file, or the prefix of its shards
	Format   string // Input's format: neardup.FormatFingerprints (the default), FormatJSONLines, FormatFiles
	Pipeline string // text formats: the fingerprint pipeline, "v3" (the default, as simhashdb's new indexes), "v2" or "v1"
	Distance int    // the largest distance of a pair or match
	Blocks   int    // find-all, find-clusters: simhash-cpp's design of C(Blocks, Distance) tables; 0 picks one for the input's size
	Shards   int    // output files: 1 (the default) writes Output, n > 1 writes Output-00000-of-0000n...
	Bad      string // where malformed lines go; "" is Output + ".bad"

	Stored     string // batch: a glob of the stored documents
	QueryChunk int    // batch: the most queries a pipeline holds (default 1<<20)

	BlockSize int // build: block size in bytes (codec.DefaultBlockSize)

	Temp      string // find-clusters: where the rounds' edges go ("" is Output + ".tmp")
	MaxRounds int    // find-clusters: stop with an error after this many rounds (default 100)
}

// pipeline is c.Pipeline as simhash's (defaults has checked it).
func (c *Config) pipeline() simhash.Pipeline {
	p, err := simhash.ParsePipeline(c.Pipeline)
	if err != nil {
		return simhash.LatestPipeline
	}
	return p
}

func (c *Config) defaults() error {
	if c.Runner == "" {
		c.Runner = "prism"
	}
	if c.Format == "" {
		c.Format = neardup.FormatFingerprints
	}
	switch c.Format {
	case neardup.FormatFingerprints, neardup.FormatJSONLines, neardup.FormatFiles:
	default:
		return fmt.Errorf("%w: --format %q: want fingerprints, jsonl or files", ErrUsage, c.Format)
	}
	switch c.Pipeline {
	case "":
		c.Pipeline = simhash.LatestPipeline.String()
	default:
		if _, err := simhash.ParsePipeline(c.Pipeline); err != nil {
			return fmt.Errorf("%w: --pipeline %q: want v1, v2 or v3", ErrUsage, c.Pipeline)
		}
	}
	if c.Input == "" || c.Output == "" {
		return fmt.Errorf("%w: --input and --output are required", ErrUsage)
	}
	if c.Distance < 0 || c.Distance > 16 {
		return fmt.Errorf("%w: --distance %d: want 0 to 16", ErrUsage, c.Distance)
	}
	if c.Blocks != 0 && c.Blocks <= c.Distance {
		return fmt.Errorf("%w: --blocks %d: want more blocks than --distance %d", ErrUsage, c.Blocks, c.Distance)
	}
	if c.Shards <= 0 {
		c.Shards = 1
	}
	if c.Bad == "" {
		c.Bad = c.Output + ".bad"
	}
	if c.QueryChunk <= 0 {
		c.QueryChunk = 1 << 20
	}
	if c.BlockSize == 0 {
		c.BlockSize = 1024
	}
	if c.Temp == "" {
		c.Temp = c.Output + ".tmp"
	}
	if c.MaxRounds <= 0 {
		c.MaxRounds = 100
	}
	return nil
}

// Report is what a job did: its counters summed over its pipelines.
type Report struct {
	Job       string           `json:"job"`
	Bad       string           `json:"bad_lines_file"`         // where malformed lines went
	Estimated int              `json:"estimated_fingerprints"` // from the input's size: it sizes designs and shards
	Design    string           `json:"design"`
	Pipelines int              `json:"pipelines"`
	Counters  map[string]int64 `json:"counters"`
	Wall      float64          `json:"wall_s"`
	// CPU is this process's CPU time: every worker's on prism, which runs
	// them in the process; the launcher's alone on a remote runner.
	CPU    float64       `json:"cpu_s"`
	Tables []TableReport `json:"tables,omitempty"` // build
}

// TableReport is one table of build: its size against the information
// bound.
type TableReport struct {
	Table        int     `json:"table"`
	Fingerprints int64   `json:"fingerprints"`
	Bytes        int64   `json:"bytes"`
	BitsPerFP    float64 `json:"bits_per_fingerprint"`
	Bound        float64 `json:"bound_bits_per_fingerprint"`
}

// BadLines returns how many input lines were malformed.
func (r *Report) BadLines() int64 { return r.Counters[neardup.CounterBad] }

type runner struct {
	n     int                 // the input's estimated fingerprints
	d     *permutation.Design // the job's design
	cfg   *Config
	rep   *Report
	start time.Time
	cpu0  time.Duration
}

// start checks c, estimates the fingerprints of input (files of format)
// and picks the job's design for that many.
func start(ctx context.Context, job string, c *Config, input, format string, design func(n int) (*permutation.Design, error)) (*runner, error) {
	if err := c.defaults(); err != nil {
		return nil, err
	}
	// A path on a file system this program lacks is a usage error here,
	// not a panic while the pipeline is built.
	for _, p := range []string{c.Output, c.Bad, c.Temp, c.Stored} {
		if p == "" {
			continue
		}
		fs, err := filesystem.New(ctx, p)
		if err != nil {
			return nil, fmt.Errorf("%w: %v", ErrUsage, err)
		}
		fs.Close()
	}
	r := &runner{cfg: c, rep: &Report{Job: job, Bad: c.Bad, Counters: map[string]int64{}}, start: time.Now(), cpu0: cpuTime()}
	n, err := estimate(ctx, input, format)
	if err != nil {
		return nil, err
	}
	if r.d, err = design(n); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrUsage, err)
	}
	r.n = n
	r.rep.Estimated, r.rep.Design = n, fmt.Sprintf("%d tables, prefixes %d+ bits", len(r.d.Tables), r.d.MinPrefix())
	return r, nil
}

// run runs one pipeline and adds its counters to the report.
func (r *runner) run(ctx context.Context, p *beam.Pipeline) (map[string]int64, error) {
	res, err := beam.Run(ctx, r.cfg.Runner, p)
	if err != nil {
		return nil, err
	}
	r.rep.Pipelines++
	cs := neardup.Counters(res)
	for k, v := range cs {
		r.rep.Counters[k] += v
	}
	return cs, nil
}

func (r *runner) done() *Report {
	r.rep.Wall = time.Since(r.start).Seconds()
	r.rep.CPU = (cpuTime() - r.cpu0).Seconds()
	return r.rep
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// estimate guesses how many fingerprints the files glob matches hold from
// their size, to size designs and shards before anything is read; a wrong
// guess costs time, never exactness.
func estimate(ctx context.Context, glob, format string) (int, error) {
	fs, err := filesystem.New(ctx, glob)
	if err != nil {
		return 0, err
	}
	defer fs.Close()
	files, err := fs.List(ctx, glob)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", glob, err)
	}
	if len(files) == 0 {
		return 0, fmt.Errorf("%s: no such file", glob)
	}
	if format == neardup.FormatFiles {
		return len(files), nil
	}
	perLine := int64(20) // a decimal fingerprint and a newline
	if format == neardup.FormatJSONLines {
		perLine = 2048
	}
	var total int64
	for _, f := range files {
		n, err := fs.Size(ctx, f)
		if err != nil {
			return 0, fmt.Errorf("%s: %w", f, err)
		}
		total += n
	}
	return int(max(total/perLine, 1)), nil
}

// bitsFor returns how many top bits split n values into groups of about
// per values each (0 to 24).
func bitsFor(n, per int) int {
	if n <= per {
		return 0
	}
	return min(24, bits.Len(uint(n/per)))
}

// shardsFor returns how many output files n lines should go to.
func shardsFor(n int) int {
	return max(1, int(math.Ceil(float64(n)/(1<<22))))
}
