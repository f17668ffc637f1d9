package main

import (
	"context"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"

	"github.com/simhashdb/simhashdb/engine"

	"github.com/simhashdb/simhashdb/simhash"
)

// sample is the bundled corpus of the demo: license texts with natural
// near-duplicate families (see sample/SOURCE.md).
//
//go:embed sample/*.txt
var sample embed.FS

type sampleDoc struct {
	name string
	text string
	fp   uint64
}

func loadSample(f *simhash.Fingerprinter) ([]sampleDoc, error) {
	files, err := fs.Glob(sample, "sample/*.txt")
	if err != nil {
		return nil, err
	}
	docs := make([]sampleDoc, 0, len(files))
	for _, p := range files {
		b, err := sample.ReadFile(p)
		if err != nil {
			return nil, err
		}
		docs = append(docs, sampleDoc{name: strings.TrimSuffix(path.Base(p), ".txt"), text: string(b), fp: f.Bytes(b)})
	}
	return docs, nil
}

func runDemo(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fl := newFlagSet("demo", "[flags]", "  simhashdb demo          # near-duplicate license texts in the bundled sample", stderr)
	k := fl.Int("k", 3, "Hamming distance within which documents are near-duplicates")
	if code := parseFlags(fl, args); code >= 0 {
		return code
	}
	if err := noArguments(fl); err != nil {
		return fail(stderr, "demo", exitUsage, err)
	}
	if *k < 0 || *k > 8 {
		fmt.Fprintf(stderr, "%s demo: --k %d: want 0 to 8\n", programName, *k)
		return exitUsage
	}
	f, err := simhash.New(simhash.Options{Pipeline: simhash.LatestPipeline}) // as new indexes fingerprint text
	if err != nil {
		return fail(stderr, "demo", exitFailed, err)
	}
	docs, err := loadSample(f)
	if err != nil {
		fmt.Fprintf(stderr, "%s demo: %v\n", programName, err)
		return exitFailed
	}
	dir, err := os.MkdirTemp("", "simhashdb-demo")
	if err != nil {
		return fail(stderr, "demo", exitFailed, err)
	}
	defer os.RemoveAll(dir)
	db, err := engine.Open(dir, engine.Options{K: max(*k, 1), Expected: int64(len(docs)), Sync: engine.SyncNone, Logger: quietLogger()})
	if err != nil {
		return fail(stderr, "demo", exitFailed, err)
	}
	defer db.Close()
	ctx := context.Background()
	byID := map[uint64]sampleDoc{}
	batch := make([]engine.Doc, len(docs))
	for i, d := range docs {
		batch[i] = engine.Doc{ID: uint64(i + 1), Fingerprint: d.fp, Name: d.name}
		byID[uint64(i+1)] = d
	}
	if err := db.InsertBatch(ctx, batch); err != nil {
		return fail(stderr, "demo", exitFailed, err)
	}
	if err := db.Flush(ctx); err != nil {
		return fail(stderr, "demo", exitFailed, err)
	}
	st, err := db.Stats(ctx)
	if err != nil {
		return fail(stderr, "demo", exitFailed, err)
	}
	fmt.Fprintf(stdout, "Indexed %d license texts bundled with simhashdb by their 64-bit SimHash fingerprints\n", len(docs))
	fmt.Fprintf(stdout, "(a temporary index: %d permuted tables of %d bytes in all, %.1f bits a fingerprint each).\n", len(st.Tables), st.TableBytes, st.BitsPerFingerprint)
	fmt.Fprintf(stdout, "Two texts are near-duplicates when their fingerprints differ in at most %d of 64 bits.\n\n", *k)

	var clusters [][]engine.Doc
	for c, err := range db.Clusters(ctx, *k) {
		if err != nil {
			return fail(stderr, "demo", exitFailed, err)
		}
		clusters = append(clusters, c)
	}
	sort.Slice(clusters, func(a, b int) bool { return clusters[a][0].Name < clusters[b][0].Name })
	grouped := 0
	fmt.Fprintf(stdout, "Near-duplicate groups (%d):\n", len(clusters))
	for n, g := range clusters {
		sort.Slice(g, func(a, b int) bool { return g[a].Name < g[b].Name })
		grouped += len(g)
		fmt.Fprintf(stdout, "  %d. ", n+1)
		for x, d := range g {
			if x > 0 {
				fmt.Fprint(stdout, ", ")
			}
			fmt.Fprint(stdout, d.Name)
		}
		fmt.Fprintln(stdout)
		for _, d := range g[1:] {
			fmt.Fprintf(stdout, "       %s %s  vs  %s %s: %s apart\n", simhash.Format(g[0].Fingerprint), g[0].Name,
				simhash.Format(d.Fingerprint), d.Name, plural(simhash.Distance(g[0].Fingerprint, d.Fingerprint), "bit"))
		}
	}
	fmt.Fprintf(stdout, "  (%d texts have no near-duplicate in the sample)\n", len(docs)-grouped)
	fmt.Fprintf(stdout, "A group is connected: every member is within %d bits of another member, so two members\ncan be farther apart than that.\n\n", *k)

	fmt.Fprintln(stdout, "Queries: an edited copy of a text, and which texts lie within distance", *k)
	byName := map[string]sampleDoc{}
	for _, d := range docs {
		byName[d.name] = d
	}
	queries := []struct{ what, text string }{
		{"Apache-2.0 with a new copyright line", "Copyright 2026 Example Corp.\n" + byName["Apache-2.0"].text},
		{"MIT with its copyright line filled in", strings.Replace(byName["MIT"].text, "<year> <copyright holders>", "2026 Jane Doe and contributors", 1)},
		{"GPL-3.0-only with its preamble removed", cutSection(byName["GPL-3.0-only"].text, "Preamble", "TERMS AND CONDITIONS")},
		{"a sentence nobody wrote into a license", "The quick brown fox jumps over the lazy dog while the crawler fetches another page."},
	}
	for _, q := range queries {
		fp := f.String(q.text)
		fmt.Fprintf(stdout, "  %s (%s):\n", q.what, simhash.Format(fp))
		hits, err := db.Query(ctx, fp, *k)
		if err != nil {
			return fail(stderr, "demo", exitFailed, err)
		}
		if len(hits) == 0 {
			// The nearest text, to show how far "not a duplicate" is.
			nearest, nd := "", 65
			for _, d := range docs {
				if x := simhash.Distance(fp, d.fp); x < nd {
					nearest, nd = d.name, x
				}
			}
			fmt.Fprintf(stdout, "      no near-duplicate (nearest: %s, %s away)\n", nearest, plural(nd, "bit"))
		}
		for _, h := range hits {
			fmt.Fprintf(stdout, "      %-16s distance %d\n", h.Name, h.Distance)
		}
	}
	return exitOK
}

// plural returns "1 bit", "2 bits".
func plural(n int, unit string) string {
	if n == 1 {
		return fmt.Sprintf("%d %s", n, unit)
	}
	return fmt.Sprintf("%d %ss", n, unit)
}

// cutSection removes the text from the line starting with from up to (not
// including) the line starting with to.
func cutSection(text, from, to string) string {
	i := strings.Index(text, from)
	j := strings.Index(text, to)
	if i < 0 || j < i {
		return text
	}
	return text[:i] + text[j:]
}
