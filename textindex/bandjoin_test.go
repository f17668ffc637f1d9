package textindex

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/sketch"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bandedIndex opens a text index for similarities from minSimilarity and
// adds texts as documents 1..n: the first half flushed, then every tenth
// of those deleted, the rest held in the memtable.
func bandedIndex(t *testing.T, texts []string, minSimilarity float64) (*engine.DB, map[uint64]engine.Doc) {
	t.Helper()
	o, err := OptionsAt(engine.Options{SizeHint: 1 << 10}, minSimilarity)
	require.NoError(t, err)
	db, err := engine.Open(t.TempDir(), o)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	f, err := simhash.New(simhash.Options{Shingle: Shingle, Pipeline: simhash.LatestPipeline})
	require.NoError(t, err)
	rd, err := NewReader(f, simhash.ReadText, db.SketchSize())
	require.NoError(t, err)
	docs := make([]engine.Doc, len(texts))
	for i, text := range texts {
		fp, sk, err := rd.Read(strings.NewReader(text))
		require.NoError(t, err)
		require.Len(t, sk, db.SketchSize())
		docs[i] = engine.Doc{ID: uint64(i + 1), Fingerprint: fp, Name: fmt.Sprint("doc ", i+1), Sketch: sk}
	}
	live := map[uint64]engine.Doc{}
	require.NoError(t, db.InsertBatch(ctx, docs[:len(docs)/2]))
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.InsertBatch(ctx, docs[len(docs)/2:]))
	for _, d := range docs {
		live[d.ID] = d
	}
	for i := 0; i < len(docs)/2; i += 10 {
		require.NoError(t, db.Delete(ctx, docs[i].ID))
		delete(live, docs[i].ID)
	}
	return db, live
}

// oraclePairs is the band join's answer by brute force: every pair of
// live documents that share a band key and whose sketches verify.
func oraclePairs(docs map[uint64]engine.Doc, l sketch.Layout, threshold float64) map[[2]uint64]float64 {
	out := map[[2]uint64]float64{}
	for _, a := range docs {
		for _, b := range docs {
			if a.ID >= b.ID {
				continue
			}
			shared := false
			for i := range l.Bands {
				shared = shared || sketch.BandKey([]byte(a.Sketch), i) == sketch.BandKey([]byte(b.Sketch), i)
			}
			if s, _ := Similarity(a.Sketch, b.Sketch); shared && s >= threshold {
				out[[2]uint64{a.ID, b.ID}] = s
			}
		}
	}
	return out
}

// TestBandPairsOracle: the band join gives exactly the oracle's pairs,
// each once with its documents whole, in the same order whether its sorts
// hold everything or spill many runs; its runs are removed.
func TestBandPairsOracle(t *testing.T) {
	r := rand.New(rand.NewPCG(11, 12))
	texts := corpus(r)
	// A hot key: one text many times over.
	for range 40 {
		texts = append(texts, texts[0])
	}
	for _, s := range []float64{0.5, 0.7, 0.8} {
		db, live := bandedIndex(t, texts, s)
		l, ok := sketch.LayoutOfSize(db.SketchSize())
		require.True(t, ok)
		var first [][2]uint64 // the order of the first run
		for _, memory := range []int{0, 1 << 16} {
			t.Run(fmt.Sprintf("similarity %.1f, memory %d", s, memory), func(t *testing.T) {
				tmp := t.TempDir()
				var stages []string
				o := JoinOptions{TempDir: tmp, Memory: memory, Progress: func(p JoinProgress) {
					if len(stages) == 0 || stages[len(stages)-1] != p.Stage {
						stages = append(stages, p.Stage)
					}
				}}
				want := oraclePairs(live, l, s)
				got := map[[2]uint64]float64{}
				var order [][2]uint64
				for p, err := range PairsWith(ctx, db, db.K(), s, o) {
					require.NoError(t, err)
					k := [2]uint64{p.A.ID, p.B.ID}
					require.Less(t, p.A.ID, p.B.ID)
					assert.NotContains(t, got, k, "pair %v twice", k)
					order = append(order, k)
					got[k] = p.Similarity
					assert.Equal(t, live[p.A.ID], p.A)
					assert.Equal(t, live[p.B.ID], p.B)
				}
				assert.Equal(t, want, got)
				if first == nil {
					first = order
				} else {
					assert.Equal(t, first, order, "the order of the pairs")
				}
				assert.Greater(t, len(want), 40*39/2, "the hot key's pairs and others")
				assert.Equal(t, []string{"keys", "candidates", "first", "verify"}, stages)
				left, err := os.ReadDir(tmp)
				require.NoError(t, err)
				assert.Empty(t, left, "runs left behind")
			})
		}
	}
}

// TestBandPairsSimilarity: on texts edited to every similarity, the
// pairs found at each threshold are those whose shingles' Jaccard
// similarity reaches it, within the sketch's error, and none far below.
func TestBandPairsSimilarity(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 14))
	vocab := make([]string, 20000)
	for i := range vocab {
		vocab[i] = fmt.Sprintf("v%dq", i)
	}
	var texts []string
	for range 40 {
		orig := make([]string, 400)
		for i := range orig {
			orig[i] = vocab[r.IntN(len(vocab))]
		}
		texts = append(texts, strings.Join(orig, " "))
		// Copies with a word in every few replaced: Jaccard from about
		// 0.9 down to 0.3.
		for _, every := range []int{50, 30, 20, 14, 10, 8} {
			ed := append([]string(nil), orig...)
			for j := r.IntN(every); j < len(ed); j += every {
				ed[j] = vocab[r.IntN(len(vocab))]
			}
			texts = append(texts, strings.Join(ed, " "))
		}
	}
	sets := make([]map[string]bool, len(texts))
	for i, text := range texts {
		sets[i] = shingles(text)
	}
	for _, s := range []float64{0.5, 0.7} {
		db, live := bandedIndex(t, texts, s)
		got := map[[2]uint64]bool{}
		for p, err := range Pairs(ctx, db, db.K(), s) {
			require.NoError(t, err)
			got[[2]uint64{p.A.ID, p.B.ID}] = true
		}
		var above, aboveFound int
		for a := range live {
			for b := range live {
				if a >= b {
					continue
				}
				jac := jaccard(sets[a-1], sets[b-1])
				found := got[[2]uint64{a, b}]
				if jac >= s+0.1 {
					above++
					if found {
						aboveFound++
					}
				}
				assert.False(t, found && jac < s-0.2, "similarity %.1f: pair %d, %d of Jaccard %.3f", s, a, b, jac)
			}
		}
		t.Logf("similarity %.1f: %d of %d pairs at %.1f or more", s, aboveFound, above, s+0.1)
		require.Greater(t, above, 30)
		assert.GreaterOrEqual(t, float64(aboveFound)/float64(above), 0.95, "similarity %.1f", s)
	}
}

// TestBandPairsCancel: a cancelled join stops with the context's error
// and leaves no run behind.
func TestBandPairsCancel(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	db, _ := bandedIndex(t, corpus(r), DefaultSimilarity)
	tmp := t.TempDir()
	c, cancel := context.WithCancel(ctx)
	cancel()
	var err error
	for _, e := range PairsWith(c, db, db.K(), DefaultSimilarity, JoinOptions{TempDir: tmp}) {
		if e != nil {
			err = e
		}
	}
	require.ErrorIs(t, err, context.Canceled)
	left, rerr := os.ReadDir(tmp)
	require.NoError(t, rerr)
	assert.Empty(t, left)
}

// TestBandGroups: the clusters and stars of a banded index, read again
// from its snapshot by cluster, are Group's of its pairs, document for
// document, whatever the sorts' memory.
func TestBandGroups(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	texts := corpus(r)
	for range 30 {
		texts = append(texts, texts[2])
	}
	db, _ := bandedIndex(t, texts, 0.5)
	collect := func(seq func(yield func([]engine.Doc, error) bool)) [][]engine.Doc {
		var out [][]engine.Doc
		for g, err := range seq {
			require.NoError(t, err)
			out = append(out, g)
		}
		return out
	}
	for _, star := range []bool{false, true} {
		for _, memory := range []int{0, 1 << 16} {
			o := JoinOptions{TempDir: t.TempDir(), Memory: memory}
			want := collect(Group(plain(PairsWith(ctx, db, db.K(), 0.5, o)), star))
			require.NotEmpty(t, want)
			got := collect(groupsWith(ctx, db, db.K(), 0.5, o, star))
			assert.Equal(t, want, got, "star %v, memory %d", star, memory)
			left, err := os.ReadDir(o.TempDir)
			require.NoError(t, err)
			assert.Empty(t, left)
		}
	}
	_, err := collect2(ClustersWith(ctx, db, db.K(), 0.3, JoinOptions{}))
	assert.ErrorIs(t, err, ErrBelowMinSimilarity)
}

func collect2(seq func(yield func([]engine.Doc, error) bool)) (int, error) {
	n := 0
	for _, err := range seq {
		if err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// TestPairsOf: the band join over documents read from elsewhere (a
// sharded index's) gives the oracle's pairs; documents that change
// between its passes stop it with ErrChanged.
func TestPairsOf(t *testing.T) {
	r := rand.New(rand.NewPCG(19, 20))
	db, live := bandedIndex(t, corpus(r), DefaultSimilarity)
	l, _ := sketch.LayoutOfSize(db.SketchSize())
	var docs []engine.Doc
	for _, d := range live {
		docs = append(docs, d)
	}
	slices.SortFunc(docs, func(a, b engine.Doc) int { return cmp.Compare(a.ID, b.ID) })
	passes := 0
	scan := func(drop bool) func(context.Context) iter.Seq2[engine.Doc, error] {
		return func(context.Context) iter.Seq2[engine.Doc, error] {
			passes++
			return func(yield func(engine.Doc, error) bool) {
				for i, d := range docs {
					if drop && passes > 1 && i == 0 {
						continue // a document gone after the first pass
					}
					if !yield(d, nil) {
						return
					}
				}
			}
		}
	}
	got := map[[2]uint64]float64{}
	for p, err := range PairsOf(ctx, scan(false), db.SketchSize(), DefaultSimilarity, JoinOptions{TempDir: t.TempDir()}) {
		require.NoError(t, err)
		got[[2]uint64{p.A.ID, p.B.ID}] = p.Similarity
	}
	assert.Equal(t, oraclePairs(live, l, DefaultSimilarity), got)
	assert.Equal(t, 3, passes, "keys, first and second documents")

	passes = 0
	var err error
	for _, e := range PairsOf(ctx, scan(true), db.SketchSize(), DefaultSimilarity, JoinOptions{TempDir: t.TempDir()}) {
		if e != nil {
			err = e
		}
	}
	require.ErrorIs(t, err, ErrChanged)

	for _, e := range PairsOf(ctx, scan(false), sketch.Size, DefaultSimilarity, JoinOptions{}) {
		assert.ErrorIs(t, e, engine.ErrInput, "a bare sketch carries no band keys")
	}
}
