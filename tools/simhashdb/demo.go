package main

import (
	"embed"
	"fmt"
	"io"
	"io/fs"
	"path"
	"sort"
	"strings"

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
	if *k < 0 || *k > 64 {
		fmt.Fprintf(stderr, "%s demo: --k %d: want 0 to 64\n", programName, *k)
		return exitUsage
	}
	f := simhash.Default()
	docs, err := loadSample(f)
	if err != nil {
		fmt.Fprintf(stderr, "%s demo: %v\n", programName, err)
		return exitFailed
	}
	fmt.Fprintf(stdout, "Fingerprinted %d license texts bundled with simhashdb (64-bit SimHash, default settings).\n", len(docs))
	fmt.Fprintf(stdout, "Two texts are near-duplicates when their fingerprints differ in at most %d of 64 bits.\n\n", *k)

	// Connected components of the within-k graph.
	parent := make([]int, len(docs))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		for parent[i] != i {
			parent[i] = parent[parent[i]]
			i = parent[i]
		}
		return i
	}
	for i := range docs {
		for j := i + 1; j < len(docs); j++ {
			if simhash.Distance(docs[i].fp, docs[j].fp) <= *k {
				parent[find(i)] = find(j)
			}
		}
	}
	groups := map[int][]int{}
	for i := range docs {
		groups[find(i)] = append(groups[find(i)], i)
	}
	var clusters [][]int
	singles := 0
	for _, g := range groups {
		if len(g) > 1 {
			clusters = append(clusters, g)
		} else {
			singles++
		}
	}
	sort.Slice(clusters, func(a, b int) bool { return docs[clusters[a][0]].name < docs[clusters[b][0]].name })
	fmt.Fprintf(stdout, "Near-duplicate groups (%d):\n", len(clusters))
	for n, g := range clusters {
		fmt.Fprintf(stdout, "  %d. ", n+1)
		for x, i := range g {
			if x > 0 {
				fmt.Fprint(stdout, ", ")
			}
			fmt.Fprint(stdout, docs[i].name)
		}
		fmt.Fprintln(stdout)
		for _, i := range g[1:] {
			fmt.Fprintf(stdout, "       %s %s  vs  %s %s: %s apart\n", simhash.Format(docs[g[0]].fp), docs[g[0]].name,
				simhash.Format(docs[i].fp), docs[i].name, plural(simhash.Distance(docs[g[0]].fp, docs[i].fp), "bit"))
		}
	}
	fmt.Fprintf(stdout, "  (%d texts have no near-duplicate in the sample)\n", singles)
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
		type hit struct {
			name string
			d    int
		}
		var hits []hit
		nearest := hit{d: 65}
		for _, d := range docs {
			x := simhash.Distance(fp, d.fp)
			if x <= *k {
				hits = append(hits, hit{d.name, x})
			}
			if x < nearest.d {
				nearest = hit{d.name, x}
			}
		}
		sort.Slice(hits, func(a, b int) bool {
			return hits[a].d < hits[b].d || hits[a].d == hits[b].d && hits[a].name < hits[b].name
		})
		if len(hits) == 0 {
			fmt.Fprintf(stdout, "      no near-duplicate (nearest: %s, %s away)\n", nearest.name, plural(nearest.d, "bit"))
		}
		for _, h := range hits {
			fmt.Fprintf(stdout, "      %-16s distance %d\n", h.name, h.d)
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
