package textindex

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var ctx = context.Background()

// corpus returns texts of words from a small vocabulary: originals, edited
// copies of some (a word in every 200, 60 or 5 replaced), and texts too
// short for a shingle, with a fixed seed.
func corpus(r *rand.Rand) []string {
	vocab := make([]string, 3000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("w%dx", i)
	}
	words := func(n int) []string {
		w := make([]string, n)
		for i := range w {
			w[i] = vocab[r.IntN(len(vocab))]
		}
		return w
	}
	var out []string
	for i := range 60 {
		orig := words(300 + r.IntN(900))
		out = append(out, strings.Join(orig, " "))
		if i%2 == 0 {
			for _, every := range []int{200, 60, 5} {
				ed := slices.Clone(orig)
				for j := r.IntN(every); j < len(ed); j += every {
					ed[j] = vocab[r.IntN(len(vocab))]
				}
				out = append(out, strings.Join(ed, " "))
			}
		}
	}
	out = append(out, "one two", "one two", "two one", "three")
	return out
}

// shingles is the test's own reading of a text's 5-word shingles.
func shingles(text string) map[string]bool {
	w := strings.Fields(text)
	s := map[string]bool{}
	for i := 0; i+5 <= len(w) || i == 0; i++ {
		s[strings.Join(w[i:min(len(w), i+5)], " ")] = true
	}
	return s
}

func jaccard(a, b map[string]bool) float64 {
	n := 0
	for x := range a {
		if b[x] {
			n++
		}
	}
	return float64(n) / float64(len(a)+len(b)-n)
}

// TestPairsAgainstJaccard: in a text index, Pairs reports every pair of
// documents whose shingle sets' Jaccard similarity is 0.9 or more and
// none below 0.5, each with an estimate near the true value; Clusters
// groups what Pairs links; Verify agrees with Pairs for each document.
func TestPairsAgainstJaccard(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	texts := corpus(r)
	f, err := simhash.New(simhash.Options{Shingle: Shingle, Pipeline: simhash.LatestPipeline})
	require.NoError(t, err)
	db, err := engine.Open(t.TempDir(), Options(engine.Options{SizeHint: 1 << 10}))
	require.NoError(t, err)
	defer db.Close()
	rd, err := NewReader(f, simhash.ReadText, db.SketchSize())
	require.NoError(t, err)
	require.True(t, Sketched(db))
	docs := make([]engine.Doc, len(texts))
	for i, text := range texts {
		fp, sk, err := rd.Read(strings.NewReader(text))
		require.NoError(t, err)
		docs[i] = engine.Doc{ID: uint64(i + 1), Fingerprint: fp, Name: fmt.Sprint("doc ", i+1), Sketch: sk}
	}
	require.NoError(t, db.InsertBatch(ctx, docs[:len(docs)/2]))
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.InsertBatch(ctx, docs[len(docs)/2:]))

	sets := make([]map[string]bool, len(texts))
	for i, text := range texts {
		sets[i] = shingles(text)
	}
	got := map[[2]uint64]float64{}
	for p, err := range Pairs(ctx, db, db.K(), DefaultSimilarity) {
		require.NoError(t, err)
		got[[2]uint64{p.A.ID, p.B.ID}] = p.Similarity
	}
	near := 0
	for i := range texts {
		for j := i + 1; j < len(texts); j++ {
			jac := jaccard(sets[i], sets[j])
			s, found := got[[2]uint64{uint64(i + 1), uint64(j + 1)}]
			if jac >= 0.9 {
				near++
				assert.True(t, found, "near pair %d, %d (Jaccard %.3f) missed", i+1, j+1, jac)
			}
			if jac < 0.5 {
				assert.False(t, found, "unrelated pair %d, %d (Jaccard %.3f) reported at %.3f", i+1, j+1, jac, s)
			}
			if found {
				assert.InDelta(t, jac, s, 0.2, "pair %d, %d", i+1, j+1)
			}
		}
	}
	t.Logf("%d near pairs, %d reported", near, len(got))
	require.Greater(t, near, 20, "the corpus holds near pairs")

	// Verify: the matches of each document's query are its pairs.
	for _, d := range docs {
		ms, err := db.Query(ctx, d.Fingerprint, db.K())
		require.NoError(t, err)
		for _, m := range Verify(ms, d.Sketch, DefaultSimilarity) {
			if m.ID == d.ID {
				assert.Equal(t, 1.0, m.Similarity, "a document is its own near-duplicate")
				continue
			}
			a, b := min(d.ID, m.ID), max(d.ID, m.ID)
			_, ok := got[[2]uint64{a, b}]
			assert.True(t, ok, "query %d found %d, which Pairs does not pair", d.ID, m.ID)
		}
	}

	// Clusters: each pair's documents in one cluster, each cluster
	// connected by pairs.
	in := map[uint64]int{}
	c := 0
	for cl, err := range Clusters(ctx, db, db.K(), DefaultSimilarity) {
		require.NoError(t, err)
		require.Greater(t, len(cl), 1)
		for _, d := range cl {
			in[d.ID] = c
		}
		c++
	}
	for p := range got {
		assert.Equal(t, in[p[0]], in[p[1]], "pair %v split", p)
	}

	// Stars: each member a verified near-duplicate of its leader, each
	// document in one star at most.
	taken := map[uint64]bool{}
	for st, err := range Stars(ctx, db, db.K(), DefaultSimilarity) {
		require.NoError(t, err)
		require.Greater(t, len(st), 1)
		for i, d := range st {
			require.False(t, taken[d.ID], "document %d in two stars", d.ID)
			taken[d.ID] = true
			if i > 0 {
				_, ok := got[[2]uint64{min(st[0].ID, d.ID), max(st[0].ID, d.ID)}]
				assert.True(t, ok, "star of %d holds %d, not a verified pair", st[0].ID, d.ID)
			}
		}
	}
	assert.NotEmpty(t, taken)
}
