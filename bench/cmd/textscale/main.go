// Command textscale measures near-duplicate detection of text at scale
// (package textscale): for each size, a seeded corpus of families made
// from the license texts bundled with simhashdb, written as JSON lines;
// simhashdb add --dataset and find-all --db over it, and a MinHash LSH
// of 128 permutations (the baseline, as datasketch builds one) in the
// same run, each a child process; the processor time, peak memory and
// bytes of each, and the recall of the planted pairs by band of their
// true Jaccard similarity.
//
//	go run ./bench/cmd/textscale --sizes 100000,1000000 --out bench/results/DATE/textscale
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/simhashdb/simhashdb/bench/textscale"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "minhash" {
		os.Exit(minhash(os.Args[2:]))
	}
	sizes := flag.String("sizes", "100000,1000000", "comma-separated corpus sizes, in documents")
	out := flag.String("out", "", "output folder (required): corpora, indexes, pairs, report.md, results.json")
	seed := flag.Uint64("seed", 1, "seed of the corpus")
	similarity := flag.Float64("similarity", 0.7, "the similarity both systems are asked for")
	sample := flag.String("sample", "tools/simhashdb/sample", "folder of the text files whose sentences make the corpus")
	bin := flag.String("simhashdb", "", "the simhashdb command to measure (default: built from ./tools/simhashdb into --out)")
	baseline := flag.Bool("baseline", true, "run the MinHash LSH baseline too")
	keep := flag.Bool("keep", false, "keep the corpora and indexes (large) after each size")
	sampleFrom := flag.Int("sample-from", 2000000, "from this size on, recall is scored on every tenth family (every reported pair is still scored)")
	baselineUpTo := flag.Int("baseline-up-to", 1000000, "the largest size the baseline runs at: its signatures are 512 bytes a document in memory")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "textscale: --out is required")
		os.Exit(2)
	}
	if err := run(*sizes, *out, *seed, *similarity, *sample, *bin, *baseline, *keep, *sampleFrom, *baselineUpTo); err != nil {
		fmt.Fprintln(os.Stderr, "textscale:", err)
		os.Exit(1)
	}
}

type result struct {
	Docs     int
	System   string
	Add      *textscale.Usage `json:",omitempty"`
	Pairs    textscale.Usage
	Bytes    int64 // of the index, or 0 for one in memory
	Score    textscale.Score
	Families uint64
}

func run(sizesFlag, out string, seed uint64, similarity float64, sample, bin string, baseline, keep bool, sampleFrom, baselineUpTo int) error {
	ctx := context.Background()
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	if bin == "" {
		bin = filepath.Join(out, "simhashdb")
		if b, err := exec.Command("go", "build", "-o", bin, "./tools/simhashdb").CombinedOutput(); err != nil {
			return fmt.Errorf("building simhashdb: %v: %s", err, b)
		}
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	c, err := textscale.NewCorpus(sample, seed)
	if err != nil {
		return err
	}
	var results []result
	for _, f := range strings.Split(sizesFlag, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1000 {
			return fmt.Errorf("--sizes %q: want sizes of at least 1000", f)
		}
		dir := filepath.Join(out, strconv.Itoa(n))
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		corpus := filepath.Join(dir, "corpus.jsonl")
		log("size %d: writing the corpus", n)
		families, err := c.Write(corpus, n)
		if err != nil {
			return err
		}
		idx := filepath.Join(dir, "idx")
		os.RemoveAll(idx)
		s := strconv.FormatFloat(similarity, 'g', -1, 64)
		log("size %d: simhashdb add --dataset", n)
		add, err := textscale.Measure(ctx, dir, "add", bin, "add", "--db", idx, "--dataset", corpus, "--progress", "none", "--sync", "none", "--min-similarity", s)
		if err != nil {
			return err
		}
		log("size %d: simhashdb find-all --db", n)
		pairs := filepath.Join(dir, "simhashdb-pairs.jsonl")
		fa, err := textscale.Measure(ctx, dir, "find-all", bin, "find-all", "--db", idx, "-o", pairs, "--progress", "json", "--similarity", s, "--temp-dir", dir)
		if err != nil {
			return err
		}
		size, err := textscale.DirSize(idx)
		if err != nil {
			return err
		}
		got, err := textscale.ReadPairs(pairs)
		if err != nil {
			return err
		}
		floor := similarity - 0.2
		every := uint64(1)
		if n >= sampleFrom {
			every = 10
		}
		log("size %d: scoring", n)
		results = append(results, result{Docs: n, System: "simhashdb", Add: &add, Pairs: fa, Bytes: size, Families: families,
			Score: c.Evaluate(families, n, got, floor, every)})
		if baseline && n <= baselineUpTo {
			log("size %d: MinHash LSH", n)
			mh, err := textscale.Measure(ctx, dir, "minhash", self, "minhash", "--corpus", corpus, "--threshold", s)
			if err != nil {
				return err
			}
			got, err := textscale.ReadPairs(filepath.Join(dir, "minhash.stdout"))
			if err != nil {
				return err
			}
			results = append(results, result{Docs: n, System: "MinHash LSH", Pairs: mh, Families: families, Score: c.Evaluate(families, n, got, floor, every)})
		}
		if !keep {
			os.RemoveAll(idx)
			os.Remove(corpus)
			os.Remove(filepath.Join(dir, "add.stdout"))
		}
		b, _ := json.MarshalIndent(results, "", "  ")
		if err := os.WriteFile(filepath.Join(out, "results.json"), b, 0o644); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(out, "report.md"), []byte(report(results, similarity)), 0o644); err != nil {
			return err
		}
	}
	fmt.Print(report(results, similarity))
	return nil
}

func report(rs []result, similarity float64) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Text at scale, similarity %g\n\n", similarity)
	b.WriteString("| documents | system | add CPU | add peak RSS | pairs CPU | pairs wall | pairs peak RSS | bytes a document | CPU a document (pairs) | reported | J < floor |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, r := range rs {
		addCPU, addRSS := "-", "-"
		if r.Add != nil {
			addCPU, addRSS = r.Add.CPU.Round(10*time.Millisecond).String(), mb(r.Add.PeakRSS)
		}
		bytes := "in memory"
		if r.Bytes > 0 {
			bytes = strconv.FormatInt(r.Bytes/int64(r.Docs), 10)
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s | %s | %.1f us | %d | %d (least J %.3f) |\n", r.Docs, r.System, addCPU, addRSS,
			r.Pairs.CPU.Round(10*time.Millisecond), r.Pairs.Wall.Round(10*time.Millisecond), mb(r.Pairs.PeakRSS), bytes,
			float64(r.Pairs.CPU.Microseconds())/float64(r.Docs), r.Score.Reported, r.Score.Below, r.Score.MinJ)
	}
	b.WriteString("\nRecall of the planted pairs by band of their true Jaccard similarity (found / planted):\n\n| documents | system |")
	for i, lo := range textscale.Bands {
		hi := 1.0
		if i > 0 {
			hi = textscale.Bands[i-1]
		}
		fmt.Fprintf(&b, " [%.1f, %.1f%s |", lo, hi, map[bool]string{true: "]", false: ")"}[i == 0])
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", len(textscale.Bands)) + "\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %d | %s |", r.Docs, r.System)
		for i := range textscale.Bands {
			rec, n := r.Score.Recall(i)
			fmt.Fprintf(&b, " %.4f of %d |", rec, n)
		}
		b.WriteString("\n")
	}
	b.WriteString("\nGrowth from one size to the next (same system):\n\n| system | from | to | documents | pairs CPU | CPU a document | pairs peak RSS |\n|---|---|---|---|---|---|---|\n")
	for i, r := range rs {
		for j := i - 1; j >= 0; j-- {
			p := rs[j]
			if p.System != r.System {
				continue
			}
			fmt.Fprintf(&b, "| %s | %d | %d | %.1fx | %.2fx | %.2fx | %.2fx |\n", r.System, p.Docs, r.Docs, float64(r.Docs)/float64(p.Docs),
				float64(r.Pairs.CPU)/float64(p.Pairs.CPU), float64(r.Pairs.CPU)/float64(r.Docs)/(float64(p.Pairs.CPU)/float64(p.Docs)),
				float64(r.Pairs.PeakRSS)/float64(p.Pairs.PeakRSS))
			break
		}
	}
	return b.String()
}

func mb(n int64) string { return fmt.Sprintf("%.0f MB", float64(n)/1e6) }

func log(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s textscale: %s\n", time.Now().Format(time.TimeOnly), fmt.Sprintf(format, args...))
}

// minhash is the baseline's child process.
func minhash(args []string) int {
	fl := flag.NewFlagSet("minhash", flag.ContinueOnError)
	corpus := fl.String("corpus", "", "the dataset")
	threshold := fl.Float64("threshold", 0.7, "the similarity")
	if err := fl.Parse(args); err != nil {
		return 2
	}
	var w io.Writer = os.Stdout
	if err := textscale.MinHashPairs(*corpus, *threshold, w); err != nil {
		fmt.Fprintln(os.Stderr, "textscale minhash:", err)
		return 1
	}
	return 0
}
