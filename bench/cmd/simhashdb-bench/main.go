// Command simhashdb-bench runs simhashdb's benchmark suite and writes
// results.json, report.md and PNG charts.
//
//	go run ./bench/cmd/simhashdb-bench            # full run, bench/results/<date>
//	go run ./bench/cmd/simhashdb-bench --quick    # smoke test, under two minutes
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/simhashdb/simhashdb/bench"
	"github.com/simhashdb/simhashdb/permutation"
)

func main() {
	if bench.ChildMain() {
		return
	}
	quick := flag.Bool("quick", false, "small data sets: a smoke test of the suite, not a measurement")
	out := flag.String("out", "", "output folder (default bench/results/<date>, or a temporary folder with --quick)")
	seed := flag.Uint64("seed", 1, "seed of the generated data sets")
	only := flag.String("only", "", "comma-separated sections to run: codec, engine, batch (default all), and disk, which runs only when named (cold queries on the disk, from a memory cgroup: run as root; its size is --engine-n's first, default 30M)")
	engineN := flag.String("engine-n", "", "comma-separated corpus sizes for the engine section alone, e.g. 100000000 (skips its design and insert runs)")
	engineTables := flag.String("engine-tables", "", "comma-separated table designs for the engine and disk sections: 0 the optimiser's (default), 20, 16, 10 or 4 the paper's of that many tables, e.g. 0,4 (skips the engine section's design and insert runs)")
	text := flag.String("text", "", "opt-in: folder of the real-text corpora (bash bench/quality/fetch.sh DIR) to add a data set of text fingerprints to the codec section")
	flag.Parse()
	if *text != "" {
		// Checked now, not after the sections before it have run.
		if fi, err := os.Stat(*text); err != nil || !fi.IsDir() {
			fmt.Fprintf(os.Stderr, "simhashdb-bench: --text %q: not a folder; fill one with: bash bench/quality/fetch.sh DIR\n", *text)
			os.Exit(2)
		}
	}
	var sizes []int
	for _, f := range sections(*engineN) {
		n, err := strconv.Atoi(f)
		if err != nil || n < 1000 {
			fmt.Fprintf(os.Stderr, "simhashdb-bench: --engine-n %q: want sizes of at least 1000\n", f)
			os.Exit(2)
		}
		sizes = append(sizes, n)
	}
	var tables []int
	for _, f := range sections(*engineTables) {
		t, err := strconv.Atoi(f)
		if err == nil && t != 0 {
			_, err = permutation.Paper(t)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "simhashdb-bench: --engine-tables %q: want 0 (the optimiser's design) or one of the paper's: 20, 16, 10, 4\n", f)
			os.Exit(2)
		}
		tables = append(tables, t)
	}
	if *out == "" {
		if *quick {
			dir, err := os.MkdirTemp("", "simhashdb-bench-")
			if err != nil {
				fmt.Fprintln(os.Stderr, "simhashdb-bench:", err)
				os.Exit(1)
			}
			*out = dir
		} else {
			*out = filepath.Join("bench", "results", time.Now().UTC().Format(time.DateOnly))
		}
	}
	if _, err := bench.Run(bench.Config{Out: *out, Quick: *quick, Seed: *seed, Only: sections(*only), EngineSizes: sizes, EngineTables: tables, TextCorpus: *text}); err != nil {
		fmt.Fprintln(os.Stderr, "simhashdb-bench:", err)
		os.Exit(1)
	}
	fmt.Println("report written to", filepath.Join(*out, "report.md"))
}

func sections(s string) []string {
	if s == "" {
		return nil
	}
	return strings.Split(s, ",")
}
