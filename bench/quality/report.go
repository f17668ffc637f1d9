package quality

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/simhashdb/simhashdb/bench/chart"
)

// Report is the outcome of a run, as written to results.json.
type Report struct {
	Documents int      `json:"documents"`
	Corpus    int      `json:"corpus_documents"`
	Pairs     int      `json:"pairs"`
	Default   string   `json:"default_config"`
	Results   []Result `json:"results"`
}

// Find returns the result of the named config.
func (r *Report) Find(name string) (Result, bool) {
	i := slices.IndexFunc(r.Results, func(x Result) bool { return x.Config == name })
	if i < 0 {
		return Result{}, false
	}
	return r.Results[i], true
}

// Write saves results.json, report.md and the charts into dir. compare names
// the configs drawn beside the default.
func (r *Report) Write(dir string, compare []string) error {
	if err := writeResults(dir, r); err != nil {
		return err
	}
	names := append([]string{r.Default}, compare...)
	var series []chart.Series
	ks := make([]float64, MaxK+1)
	for k := range ks {
		ks[k] = float64(k)
	}
	for _, n := range names {
		res, ok := r.Find(n)
		if !ok {
			return fmt.Errorf("no result for config %q", n)
		}
		series = append(series, chart.Series{Name: n + " recall", X: ks, Y: res.Recall},
			chart.Series{Name: n + " precision", X: ks, Y: res.Precision, Dashed: true})
	}
	if err := chart.Lines(filepath.Join(dir, "precision-recall.png"), chart.Axes{
		Title: "Precision and recall versus k (license texts and edits)", X: "k (Hamming distance)", Y: "fraction"}, series); err != nil {
		return err
	}
	def, _ := r.Find(r.Default)
	var xs, ys []float64
	for m := 1; m <= 64; m *= 2 {
		e := fmt.Sprintf("words-%d", m)
		xs = append(xs, def.EditFrac[e])
		ys = append(ys, def.EditRecall[e])
	}
	if err := chart.Lines(filepath.Join(dir, "recall-vs-edit.png"), chart.Axes{
		Title: "Recall at k = 3 versus edit strength (" + r.Default + ")", X: "share of words replaced", Y: "recall at k = 3", LogX: true},
		[]chart.Series{{Name: "m random words replaced (m = 1..64)", X: xs, Y: ys}}); err != nil {
		return err
	}
	f, err := os.Create(filepath.Join(dir, "report.md"))
	if err != nil {
		return err
	}
	defer f.Close()
	r.markdown(f, names)
	return f.Close()
}

func (r *Report) markdown(w io.Writer, names []string) {
	fmt.Fprintf(w, "# Fingerprint quality\n\n")
	fmt.Fprintf(w, "%d documents (%d license texts, the rest synthetic edits of them), %d scored pairs. ", r.Documents, r.Corpus, r.Pairs)
	fmt.Fprintf(w, "A pair is a near-duplicate when the Jaccard similarity of its %d-word shingle sets is >= %.1f, unrelated when < %.1f. ", JaccardShingle, NearJaccard, UnrelatedJaccard)
	fmt.Fprintf(w, "Recall: near-duplicates within distance k. Unrelated rate: unrelated pairs within k. Precision: near-duplicates among pairs within k (grey-zone pairs left out).\n\n")
	fmt.Fprintf(w, "Default pipeline: **%s**. Reproduce: `bash bench/quality/fetch.sh && go run ./bench/cmd/quality`.\n\n", r.Default)
	fmt.Fprintf(w, "![precision and recall](precision-recall.png)\n![recall versus edit strength](recall-vs-edit.png)\n\n")
	fmt.Fprintf(w, "## Versus k\n\n| config | k | recall | precision | unrelated rate |\n|---|---|---|---|---|\n")
	for _, n := range names {
		res, _ := r.Find(n)
		for k := 0; k <= MaxK; k++ {
			fmt.Fprintf(w, "| %s | %d | %.4f | %.4f | %.2e |\n", n, k, res.Recall[k], res.Precision[k], res.FalseRate[k])
		}
	}
	fmt.Fprintf(w, "\n## Every pipeline at k = 3\n\n| config | recall | unrelated rate | unrelated pairs within 3 | precision |\n|---|---|---|---|---|\n")
	for _, res := range r.Results {
		fmt.Fprintf(w, "| %s | %.4f | %.2e | %d | %.4f |\n", res.Config, res.Recall[3], res.FalseRate[3], res.UnrelatedWithin[3], res.Precision[3])
	}
	def, _ := r.Find(r.Default)
	fmt.Fprintf(w, "\n## Recall at k = 3 by edit (%s)\n\n| edit | share of words changed | recall |\n|---|---|---|\n", r.Default)
	edits := make([]string, 0, len(def.EditRecall))
	for e := range def.EditRecall {
		edits = append(edits, e)
	}
	slices.SortFunc(edits, func(a, b string) int { return strings.Compare(a, b) })
	for _, e := range edits {
		fmt.Fprintf(w, "| %s | %.4f | %.4f |\n", e, def.EditFrac[e], def.EditRecall[e])
	}
}

// writeResults creates dir and saves v in it as results.json.
func writeResults(dir string, v any) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "results.json"), b, 0o644)
}
