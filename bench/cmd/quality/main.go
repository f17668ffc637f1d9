// Command quality runs the fingerprint quality evaluation of bench/quality on
// the corpora fetched by bench/quality/fetch.sh and writes a report; with
// -releases, the evaluation on two releases of real manuals that
// bench/quality/fetch-releases.sh unpacks.
//
//	bash bench/quality/fetch.sh && go run ./bench/cmd/quality
//	bash bench/quality/fetch-releases.sh && go run ./bench/cmd/quality -releases bench/quality/data/releases -out bench/results/DATE/quality-releases
//
// With -features, the release evaluation compares features and weights
// (quality.FeatureReaders) rather than pipelines. With -man DIR, it compares
// the roff reader with man's own text on the pages under DIR:
//
//	go run ./bench/cmd/quality -man /usr/share/man -man-limit 2000
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/simhashdb/simhashdb/bench/quality"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/simhash"
)

func main() {
	corpus := flag.String("corpus", "bench/quality/data", "folder filled by bench/quality/fetch.sh")
	out := flag.String("out", "bench/results/quality", "folder for report.md, results.json and charts")
	releases := flag.String("releases", "", "evaluate on the release collections under this folder instead")
	features := flag.Bool("features", false, "with -releases: compare features and weights, not pipelines")
	verified := flag.Float64("verified", 0, "with -releases: instead, candidates within 3, 4, 5, 6 and 8 bits verified by a 32-byte sketch at this estimated Jaccard (package sketch)")
	union := flag.Float64("union", 0, "with -releases: instead, candidates that any of two or three single-word fingerprints (xxHash, FNV-1, salted xxHash features) finds within 3 or 4 bits, verified by a 32-byte sketch at this estimated Jaccard")
	bands := flag.Float64("bands", 0, "with -releases: instead, candidates that share one of 2, 3 or 4 MinHash bands (a fingerprint of MinHash values, a table each), verified by a 32-byte sketch at this estimated Jaccard")
	covering := flag.Float64("covering", 0, "with -releases: instead, candidates within 6 bits as the tables of designs exact within 4 or 5 find them (permutation.Covering, the text index's permutation.ForCandidates), verified by a 32-byte sketch at this estimated Jaccard")
	index := flag.Bool("index", false, "instead, build a text index (package textindex) and a pipeline v3 index of the license set (with -releases: of each collection's two releases) and score what find-all reports")
	man := flag.String("man", "", "instead: compare the roff reader with man's own text on the manual pages under this folder (e.g. /usr/share/man)")
	manLimit := flag.Int("man-limit", 0, "with -man: an even sample of this many pages (0: all)")
	flag.Parse()
	if *man != "" {
		f, err := simhash.New(simhash.Options{Pipeline: simhash.LatestPipeline})
		if err == nil {
			var r quality.ManResult
			if r, err = quality.CompareManPages(context.Background(), *man, *manLimit, f); err == nil {
				fmt.Print(r)
				return
			}
		}
		fmt.Fprintln(os.Stderr, "quality:", err)
		os.Exit(1)
	}
	run := run
	if *index {
		run = func(dir, _ string) error { return runSetIndex(dir) }
	}
	if *releases != "" {
		run = func(dir, out string) error { return runReleases(dir, out, *features) }
		if *verified > 0 {
			run = func(dir, _ string) error { return runVerified(dir, *verified) }
		}
		if *union > 0 {
			run = func(dir, _ string) error { return runUnion(dir, *union) }
		}
		if *bands > 0 {
			run = func(dir, _ string) error { return runBands(dir, *bands) }
		}
		if *covering > 0 {
			run = func(dir, _ string) error { return runCovering(dir, *covering) }
		}
		if *index {
			run = func(dir, _ string) error { return runIndex(dir) }
		}
		*corpus = *releases
	}
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
	if err := rep.Write(out, []string{"w=2 tf", "w=1 tf", "w=3 tf"}); err != nil {
		return err
	}
	fmt.Println("report written to", out)
	return nil
}

func runReleases(dir, out string, features bool) error {
	colls, err := quality.LoadReleases(dir)
	if err != nil {
		return err
	}
	readers, chart := quality.Readers, quality.ChartReaders
	if features {
		readers, chart = quality.FeatureReaders, quality.FeatureChart
	}
	rs, err := readers()
	if err != nil {
		return err
	}
	var rep quality.ReleaseReport
	if features {
		rep.Flags = "-features"
	}
	for _, c := range colls {
		info := quality.ReleaseCollection{Name: c.Name, Old: len(c.Old), New: len(c.New), Pairs: len(c.Pairs)}
		for _, rd := range rs {
			r := c.Evaluate(rd)
			info.Near, info.Changed, info.Cross = r.Near, r.Changed, r.Cross
			rep.Results = append(rep.Results, r)
			fmt.Printf("%-10s %-36s near=%d recall@3=%.3f changed=%d recall@3=%.3f false@3=%d (%.1e)\n", c.Name, rd.Name, r.Near, r.RecallK3, r.Changed, r.ChangedK3, r.CrossWithin[3], r.FalseRateK3)
		}
		m := c.EvaluateMinHash(1)
		fmt.Printf("%-10s %-36s recall=%.3f changed=%.3f false=%d/%d\n", c.Name, "minhash", m.RecallNear, m.RecallChanged, m.CrossFalse, m.CrossSampled)
		rep.MinHash = append(rep.MinHash, m)
		rep.Collections = append(rep.Collections, info)
	}
	if err := rep.Write(out, chart); err != nil {
		return err
	}
	fmt.Println("report written to", out)
	return nil
}

func runVerified(dir string, threshold float64) error {
	colls, rs, err := releasesAnd(dir, quality.VerifiedReaders)
	if err != nil {
		return err
	}
	var designs []*permutation.Design
	for _, n := range []int{1 << 20, 1 << 24} {
		d, err := permutation.ForIndex(3, n)
		if err != nil {
			return err
		}
		designs = append(designs, d)
	}
	var all []quality.VerifiedResult
	for _, c := range colls {
		for _, rd := range rs {
			all = append(all, c.EvaluateVerified(rd, []int{3, 4, 5, 6, 8}, threshold)...)
			for _, d := range designs {
				for _, w := range []int{6, 8} {
					all = append(all, c.EvaluateProbed(rd, d, w, threshold))
				}
			}
		}
		m := c.EvaluateMinHash(1)
		fmt.Printf("%s: minhash 128 recall %.3f changed %.3f false %d/%d\n", c.Name, m.RecallNear, m.RecallChanged, m.CrossFalse, m.CrossSampled)
	}
	fmt.Print(quality.VerifiedTable(all))
	return nil
}

// runUnion scores the candidates of several fingerprints together
// (quality.EvaluateUnion) beside one fingerprint's.
func runUnion(dir string, threshold float64) error {
	colls, rs, err := releasesAnd(dir, quality.UnionReaders)
	if err != nil {
		return err
	}
	xx, fnv, salted := rs[0], rs[1], rs[2]
	var all []quality.VerifiedResult
	for _, c := range colls {
		for _, u := range []struct {
			rds []quality.Reader
			d   int
		}{
			{[]quality.Reader{xx}, 3}, {[]quality.Reader{xx}, 4}, {[]quality.Reader{xx}, 6},
			{[]quality.Reader{xx, fnv}, 3}, {[]quality.Reader{xx, salted}, 3}, {[]quality.Reader{xx, fnv, salted}, 3},
			{[]quality.Reader{xx, salted}, 4},
		} {
			all = append(all, c.EvaluateUnion(u.rds, u.d, threshold))
		}
		fmt.Printf("%s: %d near pairs, %d of them changed\n", c.Name, c.NearCount(), c.ChangedCount())
	}
	fmt.Print(quality.VerifiedTable(all))
	return nil
}

// runBands scores candidates from MinHash bands (quality.EvaluateBands)
// beside single-word fingerprints within 6 bits, the text index's.
func runBands(dir string, threshold float64) error {
	colls, rs, err := releasesAnd(dir, quality.UnionReaders)
	if err != nil {
		return err
	}
	var all []quality.VerifiedResult
	for _, c := range colls {
		all = append(all, c.EvaluateUnion(rs[:1], 6, threshold))
		hot := make([]string, 0, 3)
		for _, b := range []int{2, 3, 4} {
			all = append(all, c.EvaluateBands(b, threshold))
			hot = append(hot, fmt.Sprintf("%d with %d bands", c.HotBand(b), b))
		}
		fmt.Printf("%s: %d near pairs, %d of them changed; %d and %d pages; the most pages sharing one band's value: %s\n",
			c.Name, c.NearCount(), c.ChangedCount(), len(c.Old), len(c.New), strings.Join(hot, ", "))
	}
	fmt.Print(quality.VerifiedTable(all))
	return nil
}

// releasesAnd loads the release collections under dir and the readers
// that readers makes.
func releasesAnd(dir string, readers func() ([]quality.Reader, error)) ([]*quality.Release, []quality.Reader, error) {
	colls, err := quality.LoadReleases(dir)
	if err != nil {
		return nil, nil, err
	}
	rs, err := readers()
	return colls, rs, err
}

// runCovering scores single-word fingerprints' candidates within 6 bits as
// the tables of designs exact within fewer bits find them
// (quality.EvaluateProbed): the text index's (permutation.ForCandidates)
// and covering designs exact within 4 and 5, beside all within 6.
func runCovering(dir string, threshold float64) error {
	colls, rs, err := releasesAnd(dir, quality.UnionReaders)
	if err != nil {
		return err
	}
	text, err := permutation.ForCandidates(6, 1<<24)
	if err != nil {
		return err
	}
	designs := []*permutation.Design{text}
	for _, c := range [][3]int{{4, 8, 2}, {4, 9, 3}, {4, 10, 3}, {5, 10, 3}} {
		d, err := permutation.Covering(c[0], c[1], c[2])
		if err != nil {
			return err
		}
		designs = append(designs, d)
	}
	var all []quality.VerifiedResult
	for _, c := range colls {
		all = append(all, c.EvaluateUnion(rs[:1], 6, threshold))
		for _, d := range designs {
			all = append(all, c.EvaluateProbed(rs[0], d, 6, threshold))
		}
		fmt.Printf("%s: %d near pairs, %d of them changed\n", c.Name, c.NearCount(), c.ChangedCount())
	}
	fmt.Print(quality.VerifiedTable(all))
	return nil
}

// runIndex scores real indexes of each collection (quality.EvaluateIndex).
func runIndex(dir string) error {
	colls, err := quality.LoadReleases(dir)
	if err != nil {
		return err
	}
	var all []quality.IndexResult
	for _, c := range colls {
		for _, kind := range quality.IndexKinds {
			tmp, err := os.MkdirTemp("", "quality-index")
			if err != nil {
				return err
			}
			r, err := c.EvaluateIndex(context.Background(), tmp, kind)
			os.RemoveAll(tmp)
			if err != nil {
				return fmt.Errorf("%s, %s: %w", c.Name, kind, err)
			}
			all = append(all, r)
		}
		m := c.EvaluateMinHash(1)
		fmt.Printf("%s: minhash 128 recall %.3f changed %.3f false %d/%d\n", c.Name, m.RecallNear, m.RecallChanged, m.CrossFalse, m.CrossSampled)
	}
	fmt.Print(quality.IndexTable(all))
	return nil
}

// runSetIndex scores real indexes of the license set (quality.Set.EvaluateIndex).
func runSetIndex(corpus string) error {
	docs, err := quality.LoadCorpus(corpus)
	if err != nil {
		return err
	}
	set, err := quality.Prepare(docs, 50, 1)
	if err != nil {
		return err
	}
	var all []quality.IndexResult
	for _, kind := range quality.IndexKinds {
		tmp, err := os.MkdirTemp("", "quality-index")
		if err != nil {
			return err
		}
		r, err := set.EvaluateIndex(context.Background(), tmp, kind)
		os.RemoveAll(tmp)
		if err != nil {
			return fmt.Errorf("%s: %w", kind, err)
		}
		all = append(all, r)
	}
	fmt.Print(quality.IndexTable(all))
	return nil
}
