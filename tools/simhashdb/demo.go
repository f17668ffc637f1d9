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
	"github.com/simhashdb/simhashdb/textindex"
)

// sample is the bundled corpus of the demo: license texts with natural
// near-duplicate families (see sample/SOURCE.md).
//
//go:embed sample/*.txt
var sample embed.FS

type sampleDoc struct {
	name string
	text string
}

func loadSample() ([]sampleDoc, error) {
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
		docs = append(docs, sampleDoc{name: strings.TrimSuffix(path.Base(p), ".txt"), text: string(b)})
	}
	return docs, nil
}

func runDemo(args []string, _ io.Reader, stdout, stderr io.Writer) int {
	fl := newFlagSet("demo", "[flags]", "  simhashdb demo          # near-duplicate license texts in the bundled sample", stderr)
	similarity := fl.Float64("similarity", textindex.DefaultSimilarity, "the estimated Jaccard similarity (of 5-word shingles) from which two texts are near-duplicates, 0 to 1")
	if code := parseFlags(fl, args); code >= 0 {
		return code
	}
	if err := noArguments(fl); err != nil {
		return fail(stderr, "demo", exitUsage, err)
	}
	if !(*similarity >= 0 && *similarity <= 1) {
		return fail(stderr, "demo", exitUsage, fmt.Errorf("--similarity %v: want 0 to 1", *similarity))
	}
	docs, err := loadSample()
	if err != nil {
		return fail(stderr, "demo", exitFailed, err)
	}
	dir, err := os.MkdirTemp("", "simhashdb-demo")
	if err != nil {
		return fail(stderr, "demo", exitFailed, err)
	}
	defer os.RemoveAll(dir)
	// A text index, as add --text makes one.
	ctx := context.Background()
	ix, err := textindex.Open(ctx, dir, engine.Options{SizeHint: int64(len(docs)), Sync: engine.SyncNone, Logger: quietLogger()}, nil)
	if err != nil {
		return fail(stderr, "demo", exitFailed, err)
	}
	defer ix.Close()
	for i, d := range docs {
		if err := ix.AddString(ctx, uint64(i+1), d.name, d.text); err != nil {
			return fail(stderr, "demo", exitFailed, fmt.Errorf("%s: %w", d.name, err))
		}
	}
	if err := ix.DB.Flush(ctx); err != nil {
		return fail(stderr, "demo", exitFailed, err)
	}
	st, err := ix.DB.Stats(ctx)
	if err != nil {
		return fail(stderr, "demo", exitFailed, err)
	}
	k := ix.DB.K()
	fmt.Fprintf(stdout, "Indexed %d license texts bundled with simhashdb: each a 64-bit SimHash fingerprint in\n", len(docs))
	fmt.Fprintf(stdout, "%d permuted tables (a temporary index, %d bytes of tables) and a %d-byte record of its text:\n", len(st.Tables), st.TableBytes, st.SketchSize)
	fmt.Fprintf(stdout, "a sketch, and band keys of its MinHash. The groups' candidates are texts that share a band key,\n")
	fmt.Fprintf(stdout, "a query's those whose fingerprints differ in at most %d of 64 bits; the sketches keep those\n", k)
	fmt.Fprintf(stdout, "whose estimated similarity (Jaccard of their 5-word shingles) is at least %.2f.\n\n", *similarity)

	var clusters [][]engine.Doc
	for c, err := range ix.Clusters(ctx, *similarity) {
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
			sim, _ := textindex.Similarity(g[0].Sketch, d.Sketch)
			fmt.Fprintf(stdout, "       %s vs %s: similarity %.2f, %s apart\n", g[0].Name, d.Name, sim,
				plural(simhash.Distance(g[0].Fingerprint, d.Fingerprint), "bit"))
		}
	}
	fmt.Fprintf(stdout, "  (%d texts have no near-duplicate in the sample)\n", len(docs)-grouped)
	fmt.Fprintf(stdout, "A group is connected: every member is a near-duplicate of another member, so two members\ncan be less alike than that.\n\n")

	fmt.Fprintln(stdout, "Queries: an edited copy of a text, and which texts are its near-duplicates")
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
		ms, err := ix.Similar(ctx, strings.NewReader(q.text), *similarity)
		if err != nil {
			return fail(stderr, "demo", exitFailed, err)
		}
		fmt.Fprintf(stdout, "  %s:\n", q.what)
		if len(ms) == 0 {
			fmt.Fprintln(stdout, "      no near-duplicate")
		}
		for _, m := range ms {
			fmt.Fprintf(stdout, "      %-16s similarity %.2f, distance %d\n", m.Name, m.Similarity, m.Distance)
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
