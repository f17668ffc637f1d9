// Command quality runs the fingerprint quality evaluation of bench/quality on
// the corpora fetched by bench/quality/fetch.sh and writes a report.
//
//	bash bench/quality/fetch.sh && go run ./bench/cmd/quality
package main

import (
	"flag"
	"fmt"
	"log/slog"
	"os"

	"github.com/simhashdb/simhashdb/bench/quality"
)

func main() {
	corpus := flag.String("corpus", "bench/quality/data", "folder filled by bench/quality/fetch.sh")
	out := flag.String("out", "bench/results/quality", "folder for report.md, results.json and charts")
	flag.Parse()
	if err := run(*corpus, *out); err != nil {
		fmt.Fprintln(os.Stderr, "quality:", err)
		os.Exit(1)
	}
}

func run(corpus, out string) error {
	docs, err := quality.LoadCorpus(corpus)
	if err != nil {
		return err
	}
	slog.Info("corpus loaded", "documents", len(docs))
	set, err := quality.Prepare(docs, 50, 1)
	if err != nil {
		return err
	}
	slog.Info("pairs scored", "documents", len(set.Docs), "pairs", len(set.Pairs))
	var results []quality.Result
	for _, c := range quality.Configs() {
		r, err := set.Evaluate(c)
		if err != nil {
			return err
		}
		results = append(results, r)
		fmt.Printf("%-26s near=%d recall@3=%.4f unrelated=%d rate@3=%.2e prec@3=%.4f\n", c.Name, r.Near, r.Recall[3], r.Unrelated, r.FalseRate[3], r.Precision[3])
	}
	rep := quality.Report{Documents: len(set.Docs), Corpus: set.Corpus, Pairs: len(set.Pairs),
		Default: quality.DefaultConfig, Results: results}
	if err := rep.Write(out, []string{"w=1 tf", "w=3 tf"}); err != nil {
		return err
	}
	fmt.Println("report written to", out)
	return nil
}
