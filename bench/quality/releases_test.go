package quality

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// releaseFixture writes two releases of a small manual: pages kept as
// they are, pages with one word changed, one rewritten, a gzipped page and
// a binary.
func releaseFixture(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	r := rand.New(rand.NewPCG(7, 7))
	words := func(n, vocab int) []string {
		w := make([]string, n)
		for i := range w {
			w[i] = fmt.Sprintf("w%d", r.IntN(vocab))
		}
		return w
	}
	write := func(side, name string, b []byte) {
		p := filepath.Join(dir, side, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	for i := range 6 {
		text := words(400, 5000)
		page := func(ws []string) []byte {
			return []byte("<!DOCTYPE html><html><body><p>" + strings.Join(ws, " ") + "</p></body></html>")
		}
		write("old", fmt.Sprintf("p%d.html", i), page(text))
		switch i {
		case 0, 1:
			write("new", fmt.Sprintf("p%d.html", i), page(text))
		case 2, 3:
			changed := append([]string(nil), text...)
			changed[200] = "changed"
			write("new", fmt.Sprintf("p%d.html", i), page(changed))
		case 4:
			write("new", fmt.Sprintf("p%d.html", i), page(words(400, 5000)))
		}
	}
	var gz bytes.Buffer
	z := gzip.NewWriter(&gz)
	_, err := z.Write([]byte(strings.Join(words(300, 5000), " ")))
	require.NoError(t, err)
	require.NoError(t, z.Close())
	write("old", "doc.gz", gz.Bytes())
	write("new", "doc.gz", gz.Bytes())
	write("old", "logo.png", []byte("\x89PNG\r\n\x1a\n\x00\x00"))
	return dir
}

func TestRelease(t *testing.T) {
	dir := releaseFixture(t)
	_, err := LoadReleases(dir)
	require.ErrorIs(t, err, errNoReleases, "a folder of collections, not one")
	rels, err := LoadReleases(filepath.Dir(dir))
	require.NoError(t, err)
	require.Len(t, rels, 1)
	rel := rels[0]
	assert.Len(t, rel.Old, 7, "6 pages and the gzip; the binary left out")
	assert.Len(t, rel.New, 6)
	require.Len(t, rel.Pairs, 6)
	near, changed := 0, 0
	for _, p := range rel.Pairs {
		if p.Jaccard >= NearJaccard {
			near++
		}
		if p.Changed {
			changed++
		}
	}
	assert.Equal(t, 5, near, "kept, one word changed, the gzip")
	assert.Equal(t, 3, changed, "two one-word changes and the rewrite")

	readers, err := Readers()
	require.NoError(t, err)
	for _, rd := range readers {
		res := rel.Evaluate(rd)
		assert.Equal(t, 5, res.Near, rd.Name)
		assert.Equal(t, 2, res.Changed, rd.Name)
		assert.Equal(t, 7*6-6, res.Cross, rd.Name)
		if rd.Name == DefaultReader {
			assert.Equal(t, 1.0, res.RecallK3, "one word in 400 stays within 3")
			assert.Zero(t, res.CrossWithin[3], "random pages are far apart")
		}
	}
	features, err := FeatureReaders()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, rd := range features {
		names[rd.Name] = true
		res := rel.Evaluate(rd)
		assert.Equal(t, 5, res.Near, rd.Name)
		assert.Zero(t, res.NoFingerprint, rd.Name)
	}
	assert.Len(t, names, 18, "every reader named apart")
	for _, name := range FeatureChart {
		assert.True(t, names[name], "charted reader %q is one of them", name)
	}
	m := rel.EvaluateMinHash(1)
	assert.Equal(t, 1.0, m.RecallNear)
	assert.Zero(t, m.CrossFalse)
	assert.Equal(t, 7*6-6, m.CrossSampled)

	rep := ReleaseReport{Collections: []ReleaseCollection{{Name: rel.Name}}, Results: []ReleaseResult{rel.Evaluate(readers[len(readers)-2])}, MinHash: []MinHashResult{m}}
	out := t.TempDir()
	require.NoError(t, rep.Write(out, ChartReaders))
	md, err := os.ReadFile(filepath.Join(out, "report.md"))
	require.NoError(t, err)
	assert.Contains(t, string(md), "| "+DefaultReader+" | 1.000 |")
}

func TestTruthShingles(t *testing.T) {
	sh, n := truthShingles("Near-duplicate DETECTION, near duplicate detection")
	assert.Equal(t, 6, n)
	assert.Len(t, sh, 2)
	_, n = truthShingles("近似重复 test")
	assert.Equal(t, 5, n, "each CJK character a token")
	sh, n = truthShingles("one two")
	assert.Equal(t, 2, n)
	assert.Len(t, sh, 1, "shorter than a shingle: one of all")
}
