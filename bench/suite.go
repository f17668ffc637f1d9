// Package bench is simhashdb's macro benchmark suite: it generates data sets
// from a fixed seed, measures the product and its baselines in the same run,
// and writes results.json, report.md and PNG charts into a folder.
//
//	go run ./bench/cmd/simhashdb-bench --quick
//
// Micro-benchmarks (go test -bench) live beside each package.
package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Config selects what a run measures.
type Config struct {
	// Out is the folder for results.json, report.md and the charts.
	Out string
	// Quick shrinks every data set so that the whole run takes well under two
	// minutes: a smoke test, not a measurement.
	Quick bool
	// Seed makes the data sets; the default 1 is what the committed reports use.
	Seed uint64
	// Only, when set, names the sections to run ("codec", "engine",
	// "batch", and "disk", which runs only when named: it needs a memory
	// cgroup to measure what it says, and builds a 30M index, or one of
	// EngineSizes[0]).
	Only []string
	// EngineSizes, when set, replaces the engine section's corpus sizes and
	// leaves out its design and insert measurements: a run at one large n.
	EngineSizes []int
	// EngineTables, when set, measures the engine section at each size with
	// each of these designs: 0 the optimiser's (the default), else the
	// paper's of that many tables (permutation.Paper), fewer tables taking
	// less memory for longer probes. Like EngineSizes, it leaves out the
	// design and insert measurements.
	EngineTables []int
	// TextCorpus, when set, adds an opt-in data set of real text to the codec
	// section: 2^18 fingerprints of the documents fetch.sh puts in this
	// folder and of seeded edits of them (see textFingerprints).
	TextCorpus string
	// Log receives progress; nil is slog.Default().
	Log *slog.Logger
}

// Machine records where a run happened.
type Machine struct {
	CPU       string `json:"cpu"`
	Cores     int    `json:"cores"`
	GoVersion string `json:"go_version"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
}

// Results is everything a run measured (results.json).
type Results struct {
	Date    string         `json:"date"`
	Quick   bool           `json:"quick"`
	Seed    uint64         `json:"seed"`
	Machine Machine        `json:"machine"`
	Codec   *CodecResults  `json:"codec,omitempty"`
	Engine  *EngineResults `json:"engine,omitempty"`
	Batch   *BatchResults  `json:"batch,omitempty"`
	Disk    []*DiskResults `json:"disk,omitempty"`
}

// Run measures and writes the report into cfg.Out.
func Run(cfg Config) (*Results, error) {
	if cfg.Seed == 0 {
		cfg.Seed = 1
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if err := os.MkdirAll(cfg.Out, 0o755); err != nil {
		return nil, err
	}
	res := &Results{Date: time.Now().UTC().Format(time.DateOnly), Quick: cfg.Quick, Seed: cfg.Seed, Machine: machine()}
	var err error
	if cfg.runs("codec") {
		if res.Codec, err = runCodec(cfg); err != nil {
			return nil, fmt.Errorf("codec: %w", err)
		}
	}
	if cfg.runs("engine") {
		if res.Engine, err = runEngine(cfg); err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
	}
	if cfg.runs("batch") {
		if res.Batch, err = runBatch(cfg); err != nil {
			return nil, fmt.Errorf("batch: %w", err)
		}
	}
	if slices.Contains(cfg.Only, "disk") {
		if res.Disk, err = runDisk(cfg); err != nil {
			return nil, fmt.Errorf("disk: %w", err)
		}
	}
	return res, write(cfg, res)
}

// quiet is the logger of the engines a run opens: warnings and errors only.
func quiet() *slog.Logger {
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

func (c Config) runs(section string) bool {
	return len(c.Only) == 0 || slices.Contains(c.Only, section)
}

func machine() Machine {
	m := Machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), OS: runtime.GOOS, Arch: runtime.GOARCH}
	if f, err := os.Open("/proc/cpuinfo"); err == nil {
		defer f.Close()
		s := bufio.NewScanner(f)
		for s.Scan() {
			if k, v, ok := strings.Cut(s.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
				m.CPU = strings.TrimSpace(v)
				break
			}
		}
	}
	return m
}

func write(cfg Config, res *Results) error {
	js, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(cfg.Out, "results.json"), append(js, '\n'), 0o644); err != nil {
		return err
	}
	var md strings.Builder
	fmt.Fprintf(&md, "# simhashdb benchmark report, %s\n\n", res.Date)
	m := res.Machine
	fmt.Fprintf(&md, "Machine: %s, %d cores, %s %s/%s. Seed %d.", m.CPU, m.Cores, m.GoVersion, m.OS, m.Arch, res.Seed)
	if res.Quick {
		md.WriteString(" **Quick run: small data, a smoke test; do not quote these numbers.**")
	}
	md.WriteString("\n\nReproduce: `go run ./bench/cmd/simhashdb-bench")
	if res.Quick {
		md.WriteString(" --quick")
	}
	if len(cfg.Only) > 0 {
		md.WriteString(" --only " + strings.Join(cfg.Only, ","))
	}
	if len(cfg.EngineSizes) > 0 {
		md.WriteString(" --engine-n " + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(cfg.EngineSizes)), ","), "[]"))
	}
	if len(cfg.EngineTables) > 0 {
		md.WriteString(" --engine-tables " + strings.Trim(strings.Join(strings.Fields(fmt.Sprint(cfg.EngineTables)), ","), "[]"))
	}
	if cfg.TextCorpus != "" {
		md.WriteString(" --text DIR")
	}
	md.WriteString("`")
	if cfg.TextCorpus != "" {
		md.WriteString(", DIR filled by `bash bench/quality/fetch.sh DIR`")
	}
	md.WriteString(".\n\n")
	if res.Codec != nil {
		res.Codec.report(&md)
	}
	if res.Engine != nil {
		res.Engine.report(&md)
	}
	if res.Batch != nil {
		res.Batch.report(&md)
	}
	for _, d := range res.Disk {
		d.report(&md)
	}
	return os.WriteFile(filepath.Join(cfg.Out, "report.md"), []byte(md.String()), 0o644)
}
