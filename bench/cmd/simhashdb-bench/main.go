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
	"strings"
	"time"

	"github.com/simhashdb/simhashdb/bench"
)

func main() {
	if bench.ChildMain() {
		return
	}
	quick := flag.Bool("quick", false, "small data sets: a smoke test of the suite, not a measurement")
	out := flag.String("out", "", "output folder (default bench/results/<date>, or a temporary folder with --quick)")
	seed := flag.Uint64("seed", 1, "seed of the generated data sets")
	only := flag.String("only", "", "comma-separated sections to run: codec, engine, batch (default all)")
	flag.Parse()
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
	if _, err := bench.Run(bench.Config{Out: *out, Quick: *quick, Seed: *seed, Only: sections(*only)}); err != nil {
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
