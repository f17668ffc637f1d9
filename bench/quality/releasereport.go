package quality

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/simhashdb/simhashdb/bench/chart"
)

// ReleaseReport is the release evaluation's results.
type ReleaseReport struct {
	Collections []ReleaseCollection `json:"collections"`
	Results     []ReleaseResult     `json:"results"`
	MinHash     []MinHashResult     `json:"minhash"`
	// Flags are the command's flags besides -releases and -out that made
	// the report ("-features").
	Flags string `json:"flags,omitempty"`
}

// ReleaseCollection describes a collection.
type ReleaseCollection struct {
	Name                 string `json:"name"`
	Old, New, Pairs      int
	Near, Changed, Cross int
}

// Write saves results.json, report.md and a chart of recall on changed
// pairs against k into dir.
func (r *ReleaseReport) Write(dir string, chartReaders []string) error {
	if err := writeResults(dir, r); err != nil {
		return err
	}
	ks := make([]float64, MaxK+1)
	for k := range ks {
		ks[k] = float64(k)
	}
	for _, c := range r.Collections {
		var series []chart.Series
		for _, res := range r.Results {
			if res.Collection != c.Name || !contains(chartReaders, res.Reader) {
				continue
			}
			y := make([]float64, MaxK+1)
			for k := range y {
				y[k] = ratio(res.ChangedWithin[k], res.Changed)
			}
			series = append(series, chart.Series{Name: res.Reader, X: ks, Y: y})
		}
		if err := chart.Lines(filepath.Join(dir, "changed-recall-"+c.Name+".png"), chart.Axes{
			Title: "Recall of changed near-duplicate pairs versus k (" + c.Name + ")", X: "k (Hamming distance)", Y: "recall"}, series); err != nil {
			return err
		}
	}
	f, err := os.Create(filepath.Join(dir, "report.md"))
	if err != nil {
		return err
	}
	defer f.Close()
	r.markdown(f)
	return f.Close()
}

// flagsArg is flags as they follow another argument.
func flagsArg(flags string) string {
	if flags == "" {
		return ""
	}
	return " " + flags
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func (r *ReleaseReport) markdown(w io.Writer) {
	fmt.Fprintf(w, "# Fingerprint quality on two releases of real manuals\n\n")
	fmt.Fprintf(w, "Each collection is one manual in two releases, from Debian's packages (`bash bench/quality/fetch-releases.sh && go run ./bench/cmd/quality -releases bench/quality/data/releases%s -out DIR`). ", flagsArg(r.Flags))
	fmt.Fprintf(w, "A file and the file at the same path in the other release are a candidate pair: near-duplicates when the Jaccard similarity of the %d-token shingles of their visible text (HTML's and XML's text, navigation included; gzip decompressed; each CJK character a token) is >= %.1f, *changed* when that text differs at all. ", JaccardShingle, NearJaccard)
	fmt.Fprintf(w, "Files at different paths are cross pairs; one within k counts as false only if its Jaccard is < %.1f (the rate's denominator is all cross pairs). Binaries are left out; files without visible words (SVG drawings) are kept, as unrelated to every file: a reader that fingerprints them can only match them falsely.\n\n", UnrelatedJaccard)
	fmt.Fprintf(w, "| collection | files old/new | same path | near | changed | cross pairs |\n|---|---|---|---|---|---|\n")
	for _, c := range r.Collections {
		fmt.Fprintf(w, "| %s | %d / %d | %d | %d | %d | %d |\n", c.Name, c.Old, c.New, c.Pairs, c.Near, c.Changed, c.Cross)
	}
	for _, c := range r.Collections {
		fmt.Fprintf(w, "\n## %s\n\n", c.Name)
		fmt.Fprintf(w, "| reader | recall k=3 (all near) | recall k=3 (changed) | changed <300 / 300-3000 / >=3000 tokens | false rate k=3 | false pairs k=3 | files without fingerprint |\n|---|---|---|---|---|---|---|\n")
		for _, res := range r.Results {
			if res.Collection != c.Name {
				continue
			}
			fmt.Fprintf(w, "| %s | %.3f | %.3f | %.2f / %.2f / %.2f | %.1e | %d | %d |\n", res.Reader, res.RecallK3, res.ChangedK3,
				res.ChangedByLength[0], res.ChangedByLength[1], res.ChangedByLength[2], res.FalseRateK3, res.CrossWithin[3], res.NoFingerprint)
		}
		for _, m := range r.MinHash {
			if m.Collection == c.Name {
				fmt.Fprintf(w, "| MinHash %d, estimate >= %.1f (%d bytes a document) | %.3f | %.3f | | %.1e (%d sampled) | %d | |\n", MinHashPerms, MinHashThreshold, m.BytesPerDocment,
					m.RecallNear, m.RecallChanged, m.FalseRate, m.CrossSampled, m.CrossFalse)
			}
		}
		fmt.Fprintf(w, "\n![changed recall versus k](changed-recall-%s.png)\n", c.Name)
	}
}
