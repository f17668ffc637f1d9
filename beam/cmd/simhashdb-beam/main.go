// Command simhashdb-beam runs simhashdb's batch jobs on Apache Beam, for
// fingerprint collections larger than one machine: find-all, find-clusters
// and batch write what their simhashdb counterparts write, and build writes
// the permuted tables as compressed blocks with a size report. It runs on
// prism, Beam's in-process runner, unless --runner names another
// (dataflow, flink, spark, universal) with that runner's flags.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"strings"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"
	"github.com/apache/beam/sdks/v2/go/pkg/beam/runners"
	"github.com/simhashdb/simhashdb/beam/jobs"
)

var commands = map[string]struct {
	help string
	run  func(context.Context, jobs.Config) (*jobs.Report, error)
}{
	"find-all":      {"every pair within --distance: one JSON array [a, b] a line", jobs.FindAll},
	"find-clusters": {"connected components of the within-distance graph: one JSON array a line", jobs.FindClusters},
	"batch":         {"answer the queries of --input against --stored: one JSON line a query", jobs.Batch},
	"build":         {"write the permuted tables as compressed blocks, and their size against the bound", jobs.Build},
}

const usage = `usage: simhashdb-beam COMMAND [flags] [Beam's flags]

Commands:
  find-all       %s
  find-clusters  %s
  batch          %s
  build          %s

  simhashdb-beam find-all --distance 3 --input 'fps/*.txt' --output pairs.jsonl
  simhashdb-beam batch --k 3 --input queries.txt --stored 'stored/*.txt' --output answers.jsonl
  simhashdb-beam find-all -d 3 -i gs://b/fps/* -o gs://b/out/pairs --shards 64 \
      --runner dataflow --project P --region R --temp_location gs://b/tmp

Input (--format): fingerprints, one a line (decimal or 0x hex) or <id> <fingerprint> [name];
jsonl, {"id":N,"text":"..."} a line; or files, a document a file (read by content and
fingerprinted as simhashdb add --text --sketches=false does, --pipeline v2 unless told v1). A malformed line is counted, written to --bad as FILE:LINE: problem,
and skipped; the job goes on and exits 1. Output order is not simhashdb's: sort to compare.
A JSON report of the counters goes to standard error.

Run 'simhashdb-beam COMMAND -h' for a command's flags.
`

func main() {
	os.Exit(run(os.Args[1:], os.Stderr))
}

func run(args []string, stderr io.Writer) int {
	if len(args) == 0 || strings.HasPrefix(args[0], "-") {
		// A Beam worker starts this program with only Beam's flags:
		// beam.Init serves it and does not return.
		flag.Parse()
		beam.Init()
		fmt.Fprintf(stderr, usage, commands["find-all"].help, commands["find-clusters"].help, commands["batch"].help, commands["build"].help)
		return 2
	}
	cmd, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(stderr, "simhashdb-beam: unknown command %q\n", args[0])
		fmt.Fprintf(stderr, usage, commands["find-all"].help, commands["find-clusters"].help, commands["batch"].help, commands["build"].help)
		return 2
	}
	var c jobs.Config
	fl := flag.CommandLine
	fl.Usage = func() {
		fmt.Fprintf(stderr, "usage: simhashdb-beam %s [flags]: %s\n\n", args[0], cmd.help)
		fl.PrintDefaults()
	}
	register(fl, args[0], &c)
	verbose := fl.Bool("verbose", false, "log what the runner logs at Info")
	if err := fl.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fl.NArg() > 0 {
		fmt.Fprintf(stderr, "simhashdb-beam %s: unexpected arguments %q\n", args[0], fl.Args())
		return 2
	}
	beam.Init()
	if !*verbose {
		// Prism logs every job and worker at Info.
		slog.SetDefault(slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	}
	c.Runner = *runners.Runner
	// Beam's runner leaves files in the temporary folder (an empty one
	// for every loopback run): they go in one of the job's own, removed
	// when it ends.
	if tmp, err := os.MkdirTemp("", "simhashdb-beam-"); err == nil {
		defer os.RemoveAll(tmp)
		defer os.Setenv("TMPDIR", os.Getenv("TMPDIR"))
		os.Setenv("TMPDIR", tmp)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	rep, err := cmd.run(ctx, c)
	if err != nil {
		fmt.Fprintf(stderr, "simhashdb-beam %s: %v\n", args[0], err)
		if errors.Is(err, jobs.ErrUsage) {
			return 2
		}
		return 1
	}
	b, _ := json.Marshal(rep)
	fmt.Fprintf(stderr, "%s\n", b)
	if n := rep.BadLines(); n > 0 {
		fmt.Fprintf(stderr, "simhashdb-beam %s: %d malformed input lines skipped, listed in %s\n", args[0], n, rep.Bad)
		return 1
	}
	return 0
}

// register defines a command's flags: simhashdb's names, long and short.
func register(fl *flag.FlagSet, cmd string, c *jobs.Config) {
	both := func(long, short string, p *int, v int, help string) {
		fl.IntVar(p, long, v, help)
		if short != "" {
			fl.IntVar(p, short, v, help)
		}
	}
	str := func(long, short string, p *string, help string) {
		fl.StringVar(p, long, "", help)
		if short != "" {
			fl.StringVar(p, short, "", help)
		}
	}
	both("distance", "d", &c.Distance, 3, "the largest Hamming distance of a pair or match")
	if cmd == "batch" {
		fl.IntVar(&c.Distance, "k", 3, "the largest distance of a match (as simhashdb batch's --k)")
	}
	str("input", "i", &c.Input, "input files (a glob; local, gs://, s3://); batch: the queries")
	str("output", "o", &c.Output, "output file, or the prefix of its shards")
	fl.StringVar(&c.Format, "format", "fingerprints", "input format: fingerprints, jsonl or files (batch: of --stored)")
	fl.StringVar(&c.Pipeline, "pipeline", "v3", "jsonl and files: the fingerprint pipeline, v3 (as simhashdb's new indexes), v2 or v1 (as indexes made before v3 or v2)")
	fl.StringVar(&c.Bad, "bad", "", "where malformed input lines go (default: OUTPUT.bad)")
	fl.IntVar(&c.Shards, "shards", 1, "output files: 1 writes OUTPUT, N > 1 writes OUTPUT-00000-of-0000N...")
	switch cmd {
	case "find-all", "find-clusters", "build":
		both("blocks", "b", &c.Blocks, 0, "simhash-cpp's design: fingerprints in this many blocks, C(blocks, distance) tables; 0 picks one for the input's size")
	}
	switch cmd {
	case "batch":
		fl.StringVar(&c.Stored, "stored", "", "the stored documents (a glob): <id> <fingerprint> [name] a line, or --format's")
		fl.IntVar(&c.QueryChunk, "query-chunk", 1<<20, "the most queries one pipeline holds in memory; more run as chunks, OUTPUT-i-of-n")
	case "find-clusters":
		fl.StringVar(&c.Temp, "temp", "", "where the rounds' edges go (default: OUTPUT.tmp)")
		fl.IntVar(&c.MaxRounds, "max-rounds", 100, "give up after this many rounds")
	case "build":
		fl.IntVar(&c.BlockSize, "block-size", 1024, "block size in bytes")
	}
}
