package quality

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/simhashdb/simhashdb/simhash"
)

// Thresholds of the evaluation: a pair is a near-duplicate when the Jaccard
// similarity of its 5-word shingle sets is at least NearJaccard, and unrelated
// below UnrelatedJaccard. Pairs in between are reported by neither measure.
const (
	JaccardShingle   = 5
	NearJaccard      = 0.9
	UnrelatedJaccard = 0.5
	MaxK             = 10
)

// Pair is two documents and their similarity.
type Pair struct {
	A, B    int     // indexes into the evaluation's documents
	Jaccard float64 // of 5-word shingle sets
	Edit    string  // synthetic edit that made B from A, "" for corpus pairs
	Frac    float64 // share of B's words the edit changed
}

// Set is a corpus prepared for evaluation: documents (originals followed by
// synthetic edits) and every pair worth scoring.
type Set struct {
	Docs  []Doc
	Pairs []Pair
	// Corpus is the number of original documents; Docs[Corpus:] are edits.
	Corpus int
}

var adWords = strings.Fields(`limited offer buy now save big discount free shipping
	subscribe today exclusive deal click here best price sale ends soon special
	promotion members only coupon code order online new arrivals top rated`)

// Edit is a synthetic change of a document, as the paper lists the
// differences between near-duplicate web pages.
type Edit struct {
	Name  string
	Apply func(words []string, r *rand.Rand, donor []string) (out []string, changed int)
}

// Edits returns the synthetic edits: a timestamp line, a visitor counter, an
// ad block of 30 words, and m replaced words for m = 1, 2, 4, ..., 64.
func Edits() []Edit {
	es := []Edit{
		{"timestamp", func(w []string, r *rand.Rand, _ []string) ([]string, int) {
			ts := fmt.Sprintf("Last updated %04d-%02d-%02d %02d:%02d:%02d UTC", 2000+r.IntN(26),
				1+r.IntN(12), 1+r.IntN(28), r.IntN(24), r.IntN(60), r.IntN(60))
			add := strings.Fields(ts)
			return append(add, w...), len(add)
		}},
		{"counter", func(w []string, r *rand.Rand, _ []string) ([]string, int) {
			add := strings.Fields(fmt.Sprintf("You are visitor number %d", r.IntN(1000000)))
			return append(slices.Clone(w), add...), len(add)
		}},
		{"ad-block", func(w []string, r *rand.Rand, _ []string) ([]string, int) {
			ad := make([]string, 30)
			for i := range ad {
				ad[i] = adWords[r.IntN(len(adWords))]
			}
			at := r.IntN(len(w) + 1)
			out := slices.Concat(w[:at], ad, w[at:])
			return out, len(ad)
		}},
	}
	for m := 1; m <= 64; m *= 2 {
		es = append(es, Edit{fmt.Sprintf("words-%d", m), func(w []string, r *rand.Rand, donor []string) ([]string, int) {
			out := slices.Clone(w)
			n := min(m, len(out))
			for _, i := range r.Perm(len(out))[:n] {
				out[i] = donor[r.IntN(len(donor))]
			}
			return out, n
		}})
	}
	return es
}

// Prepare adds every edit of every document of at least minWords words
// (seeded, so the set is the same on every run), and scores every pair of
// originals and every (original, edit) pair by Jaccard similarity.
func Prepare(docs []Doc, minWords int, seed uint64) (*Set, error) {
	shingler, err := simhash.New(simhash.Options{Shingle: JaccardShingle})
	if err != nil {
		return nil, err
	}
	s := &Set{Docs: slices.Clone(docs), Corpus: len(docs)}
	r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	var vocab []string
	for _, d := range docs {
		vocab = append(vocab, strings.Fields(d.Text)...)
	}
	type edited struct {
		orig   int
		edit   string
		frac   float64
		target int
	}
	var eds []edited
	for i, d := range docs {
		words := strings.Fields(d.Text)
		if len(words) < minWords {
			continue
		}
		for _, e := range Edits() {
			out, changed := e.Apply(words, r, vocab)
			eds = append(eds, edited{orig: i, edit: e.Name, frac: float64(changed) / float64(len(out)), target: len(s.Docs)})
			s.Docs = append(s.Docs, Doc{Name: d.Name + "+" + e.Name, Text: strings.Join(out, " ")})
		}
	}
	sets := make([][]uint64, len(s.Docs))
	parallel(len(s.Docs), func(i int) {
		var fs []uint64
		_ = shingler.Features(strings.NewReader(s.Docs[i].Text), func(h uint64) { fs = append(fs, h) })
		slices.Sort(fs)
		sets[i] = slices.Compact(fs)
	})
	n := s.Corpus
	rows := make([][]Pair, n)
	parallel(n, func(i int) {
		for j := i + 1; j < n; j++ {
			rows[i] = append(rows[i], Pair{A: i, B: j, Jaccard: jaccard(sets[i], sets[j])})
		}
	})
	for _, r := range rows {
		s.Pairs = append(s.Pairs, r...)
	}
	for _, e := range eds {
		s.Pairs = append(s.Pairs, Pair{A: e.orig, B: e.target, Jaccard: jaccard(sets[e.orig], sets[e.target]), Edit: e.edit, Frac: e.frac})
	}
	return s, nil
}

// jaccard returns |a∩b|/|a∪b| of two sorted sets (1 for two empty sets).
func jaccard(a, b []uint64) float64 {
	if len(a)+len(b) == 0 {
		return 1
	}
	i, j, inter := 0, 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] < b[j]:
			i++
		case a[i] > b[j]:
			j++
		default:
			inter++
			i++
			j++
		}
	}
	return float64(inter) / float64(len(a)+len(b)-inter)
}

func parallel(n int, f func(i int)) {
	var wg sync.WaitGroup
	next := make(chan int)
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for i := range next {
				f(i)
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
}

// DefaultConfig names the config of the command's new indexes: simhash's
// default Options with LatestPipeline; PreviousConfig that of indexes
// made with pipeline v2.
const (
	DefaultConfig  = "w=2 tf v3"
	PreviousConfig = "w=2 tf v2"
)

// Config is one fingerprinting pipeline under evaluation.
type Config struct {
	Name    string
	Options simhash.Options
	UseIDF  bool // learn an IDF table from the documents first
}

// Configs returns the pipelines the evaluation compares: shingle widths 1 to
// 4, each weighting, with and without English stop words and IDF, and the
// latest pipeline's default.
func Configs() []Config {
	var cs []Config
	for _, w := range []int{1, 2, 3, 4} {
		for _, wt := range []simhash.Weighting{simhash.TF, simhash.LogTF, simhash.Binary} {
			for _, stop := range []bool{false, true} {
				for _, idf := range []bool{false, true} {
					o := simhash.Options{Shingle: w, Weighting: wt}
					name := fmt.Sprintf("w=%d %s", w, wt)
					if stop {
						o.StopWords = simhash.EnglishStopWords()
						name += " +stop"
					}
					if idf {
						name += " +idf"
					}
					cs = append(cs, Config{Name: name, Options: o, UseIDF: idf})
				}
			}
		}
	}
	return append(cs, Config{Name: PreviousConfig, Options: simhash.Options{Pipeline: simhash.PipelineV2}},
		Config{Name: DefaultConfig, Options: simhash.Options{Pipeline: simhash.LatestPipeline}})
}

// Result is the score of one Config.
type Result struct {
	Config string `json:"config"`
	// Near and Unrelated count the pairs of each class.
	Near      int `json:"near_pairs"`
	Unrelated int `json:"unrelated_pairs"`
	// NearWithin[k] and UnrelatedWithin[k] count the pairs of each class at
	// Hamming distance <= k, for k = 0..MaxK.
	NearWithin      []int     `json:"near_within"`
	UnrelatedWithin []int     `json:"unrelated_within"`
	Recall          []float64 `json:"recall"`
	FalseRate       []float64 `json:"unrelated_rate"`
	Precision       []float64 `json:"precision"`
	// EditRecall[edit] is the recall at k = 3 of the synthetic pairs made by
	// that edit, whatever their Jaccard.
	EditRecall map[string]float64 `json:"edit_recall_k3"`
	EditFrac   map[string]float64 `json:"edit_changed_fraction"`
}

// Evaluate fingerprints every document with c and scores every pair.
func (s *Set) Evaluate(c Config) (Result, error) {
	opts := c.Options
	if c.UseIDF {
		base, err := simhash.New(opts)
		if err != nil {
			return Result{}, err
		}
		idf := simhash.NewIDF()
		for _, d := range s.Docs[:s.Corpus] {
			if err := idf.AddDocument(base, strings.NewReader(d.Text)); err != nil {
				return Result{}, err
			}
		}
		opts.IDF = idf
	}
	f, err := simhash.New(opts)
	if err != nil {
		return Result{}, err
	}
	fps := make([]uint64, len(s.Docs))
	parallel(len(s.Docs), func(i int) { fps[i] = f.Text(s.Docs[i].Text) })
	res := Result{Config: c.Name, NearWithin: make([]int, MaxK+1), UnrelatedWithin: make([]int, MaxK+1),
		EditRecall: map[string]float64{}, EditFrac: map[string]float64{}}
	editN := map[string]int{}
	for _, p := range s.Pairs {
		d := bits.OnesCount64(fps[p.A] ^ fps[p.B])
		if p.Edit != "" {
			editN[p.Edit]++
			res.EditFrac[p.Edit] += p.Frac
			if d <= 3 {
				res.EditRecall[p.Edit]++
			}
		}
		switch {
		case p.Jaccard >= NearJaccard:
			res.Near++
			for k := d; k <= MaxK; k++ {
				res.NearWithin[k]++
			}
		case p.Jaccard < UnrelatedJaccard:
			res.Unrelated++
			for k := d; k <= MaxK; k++ {
				res.UnrelatedWithin[k]++
			}
		}
	}
	for e, n := range editN {
		res.EditRecall[e] /= float64(n)
		res.EditFrac[e] /= float64(n)
	}
	for k := 0; k <= MaxK; k++ {
		res.Recall = append(res.Recall, ratio(res.NearWithin[k], res.Near))
		res.FalseRate = append(res.FalseRate, ratio(res.UnrelatedWithin[k], res.Unrelated))
		res.Precision = append(res.Precision, ratio(res.NearWithin[k], res.NearWithin[k]+res.UnrelatedWithin[k]))
	}
	return res, nil
}

func ratio(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}
