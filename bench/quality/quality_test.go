package quality

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestJaccard(t *testing.T) {
	tests := []struct {
		a, b []uint64
		want float64
	}{
		{nil, nil, 1},
		{[]uint64{1}, nil, 0},
		{[]uint64{1, 2, 3}, []uint64{1, 2, 3}, 1},
		{[]uint64{1, 2, 3}, []uint64{2, 3, 4}, 0.5},
		{[]uint64{1, 5}, []uint64{2, 6}, 0},
	}
	for _, tc := range tests {
		assert.InDelta(t, tc.want, jaccard(tc.a, tc.b), 1e-12, "%v %v", tc.a, tc.b)
	}
}

// fixture returns n seeded documents of 300 words each, drawn from disjoint
// vocabularies so that every pair of originals is unrelated.
func fixture(n int) []Doc {
	r := rand.New(rand.NewPCG(42, 42))
	docs := make([]Doc, n)
	for i := range docs {
		words := make([]string, 300)
		for j := range words {
			words[j] = fmt.Sprintf("d%dw%d", i, r.IntN(200))
		}
		docs[i] = Doc{Name: fmt.Sprint(i), Text: strings.Join(words, " ")}
	}
	return docs
}

func TestPrepareAndEvaluate(t *testing.T) {
	docs := fixture(12)
	s, err := Prepare(docs, 50, 1)
	require.NoError(t, err)
	assert.Equal(t, 12, s.Corpus)
	assert.Len(t, s.Docs, 12+12*len(Edits()))
	assert.Len(t, s.Pairs, 12*11/2+12*len(Edits()))
	for _, p := range s.Pairs[:66] {
		assert.Less(t, p.Jaccard, UnrelatedJaccard, "disjoint vocabularies")
	}
	byEdit := map[string]Pair{}
	for _, p := range s.Pairs[66:] {
		byEdit[p.Edit] = p
		assert.Greater(t, p.Frac, 0.0)
	}
	assert.Greater(t, byEdit["words-1"].Jaccard, byEdit["words-64"].Jaccard, "stronger edits are less similar")
	assert.Greater(t, byEdit["words-1"].Jaccard, NearJaccard)

	res, err := s.Evaluate(Config{Name: "test", Options: Configs()[0].Options})
	require.NoError(t, err)
	unrelated := 0
	for _, p := range s.Pairs {
		if p.Jaccard < UnrelatedJaccard {
			unrelated++ // the 66 originals' pairs and the heaviest edits
		}
	}
	assert.Equal(t, unrelated, res.Unrelated)
	assert.Greater(t, unrelated, 66)
	assert.Positive(t, res.Near)
	assert.Len(t, res.Recall, MaxK+1)
	for k := 1; k <= MaxK; k++ {
		assert.GreaterOrEqual(t, res.Recall[k], res.Recall[k-1], "recall grows with k")
		assert.GreaterOrEqual(t, res.FalseRate[k], res.FalseRate[k-1])
	}
	assert.Zero(t, res.UnrelatedWithin[3], "unrelated random documents are ~32 bits apart")
	assert.Equal(t, 1.0, res.EditRecall["words-1"], "one replaced word of 300 stays within 3 bits")

	withIDF, err := s.Evaluate(Config{Name: "idf", Options: Configs()[1].Options, UseIDF: true})
	require.NoError(t, err)
	assert.Equal(t, res.Near, withIDF.Near)

	dir := t.TempDir()
	rep := Report{Documents: len(s.Docs), Corpus: s.Corpus, Pairs: len(s.Pairs), Default: "test", Results: []Result{res, withIDF}}
	require.NoError(t, rep.Write(dir, []string{"idf"}))
	for _, f := range []string{"report.md", "results.json", "precision-recall.png", "recall-vs-edit.png"} {
		st, err := os.Stat(filepath.Join(dir, f))
		require.NoError(t, err, f)
		assert.Positive(t, st.Size(), f)
	}
	md, _ := os.ReadFile(filepath.Join(dir, "report.md"))
	assert.Contains(t, string(md), "| test | 3 |")
	assert.Error(t, rep.Write(dir, []string{"missing"}))
}

func TestLoadCorpus(t *testing.T) {
	dir := t.TempDir()
	_, err := LoadCorpus(dir)
	assert.ErrorContains(t, err, "fetch.sh")
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "spdx", "licenses"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "licenseclassifier", "License", "X"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "spdx", "licenses", "A.json"), []byte(`{"licenseText":"alpha beta"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "spdx", "licenses", "B.json"), []byte(`{"licenseText":" alpha beta\n"}`), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "licenseclassifier", "License", "X", "license.txt"), []byte("gamma"), 0o644))
	docs, err := LoadCorpus(dir)
	require.NoError(t, err)
	assert.Equal(t, []Doc{{"spdx/A", "alpha beta"}, {"lc/License/X/license.txt", "gamma"}}, docs, "identical texts kept once")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "spdx", "licenses", "C.json"), []byte(`{not json`), 0o644))
	_, err = LoadCorpus(dir)
	assert.ErrorContains(t, err, "C.json")
}
