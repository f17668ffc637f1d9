package quality

import (
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/bits"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/cespare/xxhash/v2"
	"github.com/simhashdb/simhashdb/simhash"
	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// A release collection is one manual in two releases (fetch-releases.sh
// unpacks Debian's packages of both): a file of the old release and the
// file at the same path in the new one are a candidate pair, as a crawler
// meets a page again; files at different paths are cross pairs, expected
// to be unrelated.
type Release struct {
	Name     string
	Old, New []Page
	Pairs    []ReleasePair // same path in both
}

// Page is one file of a release: its bytes as on disk, and the text a
// reader sees (ground truth: HTML's visible text, decompressed files),
// as shingles.
type Page struct {
	Path     string
	Raw      []byte
	Shingles []uint64 // sorted, distinct
	Tokens   int
	Text     string // the visible text, to tell a changed text from an identical one
}

// ReleasePair is a file in both releases.
type ReleasePair struct {
	Old, New int
	Jaccard  float64
	Changed  bool // the visible text differs
}

// LoadRelease reads the files under oldDir and newDir (binaries, as
// simhash.Document tells them, and files without words left out) and
// pairs them by path.
func LoadRelease(name, oldDir, newDir string) (*Release, error) {
	r := &Release{Name: name}
	var err error
	if r.Old, err = loadPages(oldDir); err != nil {
		return nil, err
	}
	if r.New, err = loadPages(newDir); err != nil {
		return nil, err
	}
	byPath := map[string]int{}
	for i, p := range r.New {
		byPath[p.Path] = i
	}
	for i, p := range r.Old {
		j, ok := byPath[p.Path]
		if !ok {
			continue
		}
		r.Pairs = append(r.Pairs, ReleasePair{Old: i, New: j, Jaccard: r.jaccard(i, j), Changed: p.Text != r.New[j].Text})
	}
	return r, nil
}

// recall returns the share of r's near pairs (Jaccard >= NearJaccard),
// and of those whose text changed, that found reports found.
func (r *Release) recall(found func(p ReleasePair) bool) (near, changed float64) {
	n, c, nHit, cHit := 0, 0, 0, 0
	for _, p := range r.Pairs {
		if p.Jaccard < NearJaccard {
			continue
		}
		hit := found(p)
		n++
		c += b2i(p.Changed)
		nHit += b2i(hit)
		cHit += b2i(hit && p.Changed)
	}
	return ratio(nHit, n), ratio(cHit, c)
}

// NearCount is the number of near pairs (Jaccard >= NearJaccard), and
// ChangedCount of those whose text changed: what a recall is over.
func (r *Release) NearCount() int {
	n, _ := r.counts()
	return n
}

// ChangedCount: see NearCount.
func (r *Release) ChangedCount() int {
	_, c := r.counts()
	return c
}

func (r *Release) counts() (near, changed int) {
	for _, p := range r.Pairs {
		if p.Jaccard >= NearJaccard {
			near++
			changed += b2i(p.Changed)
		}
	}
	return near, changed
}

// jaccard is the Jaccard similarity of old page i and new page j; 0 when
// either has no visible words (an image: it has nothing in common with
// anything).
func (r *Release) jaccard(i, j int) float64 {
	if r.Old[i].Tokens == 0 || r.New[j].Tokens == 0 {
		return 0
	}
	return jaccard(r.Old[i].Shingles, r.New[j].Shingles)
}

// loadPages reads the pages under root, those without visible words
// (SVG drawings, say) kept: a reader that fingerprints them can make
// false matches of them.
func loadPages(root string) ([]Page, error) {
	var pages []Page
	err := filepath.WalkDir(root, func(path string, de fs.DirEntry, err error) error {
		if err != nil || !de.Type().IsRegular() {
			return err
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text, ok, err := visibleText(raw)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if !ok {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		sh, n := truthShingles(text)
		pages = append(pages, Page{Path: rel, Raw: raw, Shingles: sh, Tokens: n, Text: text})
		return nil
	})
	sort.Slice(pages, func(i, j int) bool { return pages[i].Path < pages[j].Path })
	return pages, err
}

// visibleText is the ground truth's reading of a file: gzip decompressed,
// HTML's and XML's visible text (all of it, navigation included: what a
// reader sees; an SVG image's drawing is not text), other text as it is;
// ok is false for binaries.
func visibleText(raw []byte) (string, bool, error) {
	if bytes.HasPrefix(raw, []byte{0x1f, 0x8b}) {
		z, err := gzip.NewReader(bytes.NewReader(raw))
		if err != nil {
			return "", false, err
		}
		if raw, err = io.ReadAll(z); err != nil {
			return "", false, err
		}
	}
	if isBinaryHead(raw[:min(len(raw), 8<<10)]) {
		return "", false, nil
	}
	if looksLikeHTML(raw) {
		var b strings.Builder
		err := htmlWords(bytes.NewReader(raw), &b)
		return b.String(), true, err
	}
	return string(raw), true, nil
}

// isBinaryHead: a C0 control byte other than white space and escape.
func isBinaryHead(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\f' && c != '\r' && c != 0x1b {
			return true
		}
	}
	return false
}

func looksLikeHTML(b []byte) bool {
	head := bytes.ToLower(bytes.TrimSpace(b[:min(len(b), 1024)]))
	return bytes.HasPrefix(head, []byte("<!doctype html")) || bytes.HasPrefix(head, []byte("<html")) ||
		bytes.HasPrefix(head, []byte("<?xml")) || bytes.HasPrefix(head, []byte("<svg"))
}

// truthShingles returns the hashed 5-token shingles of text, where a token
// is a run of letters and digits, lower-cased, and each CJK character is a
// token of its own; and the number of tokens.
func truthShingles(text string) ([]uint64, int) {
	var toks []uint64
	start := -1
	flush := func(end int) {
		if start >= 0 {
			toks = append(toks, xxhash.Sum64String(strings.ToLower(text[start:end])))
			start = -1
		}
	}
	for i, r := range text {
		switch {
		case unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) || unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r):
			flush(i)
			toks = append(toks, xxhash.Sum64String(text[i:i+utf8.RuneLen(r)]))
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			if start < 0 {
				start = i
			}
		default:
			flush(i)
		}
	}
	flush(len(text))
	var sh []uint64
	for i := 0; i+JaccardShingle <= len(toks) || (i == 0 && len(toks) > 0); i++ {
		var h uint64 = 0x9e3779b97f4a7c15
		for _, t := range toks[i:min(len(toks), i+JaccardShingle)] {
			h = bits.RotateLeft64(h, 17) ^ t
			h *= 0xbf58476d1ce4e5b9
		}
		sh = append(sh, h)
	}
	slices.Sort(sh)
	return slices.Compact(sh), len(toks)
}

// Reader is a way of fingerprinting a file's bytes; ok false when it
// gives the file no fingerprint (binary, no words).
type Reader struct {
	Name string
	Fp   func(raw []byte) (fp uint64, ok bool)
}

// Readers returns the pipelines the release evaluation compares: what the
// command did before (v1, files as plain text or with --html), v1 and v2
// reading by content, v3 with numbers at several weights in long pages,
// and v3 skipping HTML's navigation.
func Readers() ([]Reader, error) {
	v1 := simhash.Default()
	v2, err := simhash.New(simhash.Options{Pipeline: simhash.PipelineV2})
	if err != nil {
		return nil, err
	}
	rs := []Reader{
		{"v1 text (before: add --text)", func(raw []byte) (uint64, bool) { return v1.Bytes(raw), true }},
		{"v1 --html (before)", func(raw []byte) (uint64, bool) {
			fp, err := v1.HTML(bytes.NewReader(raw))
			return fp, err == nil
		}},
		{"v1 read by content", document(v1)},
		{PreviousReader, document(v2)},
	}
	for _, w := range []float64{1, 0.5, 0.25, simhash.NumberWeight} {
		f, err := simhash.New(simhash.Options{Pipeline: simhash.PipelineV3, NumberWeight: w})
		if err != nil {
			return nil, err
		}
		name := fmt.Sprintf("v3 numbers >= %.2g", w) // more in short pages (simhash.NumberFeatures)
		if w == simhash.NumberWeight {
			name = DefaultReader
		}
		rs = append(rs, Reader{name, document(f)})
	}
	nav, err := simhash.New(simhash.Options{Pipeline: simhash.PipelineV3, SkipNavigation: true})
	if err != nil {
		return nil, err
	}
	return append(rs, Reader{"v3 --skip-nav", document(nav)}), nil
}

// FeatureReaders returns pipeline v3 (read by content) with other
// features and weights than its own: shingles of 1, 2 and 3 words, TF,
// log TF and binary weights, with and without English stop words. They
// show what a choice of features trades between recall and false pairs.
func FeatureReaders() ([]Reader, error) {
	var rs []Reader
	for _, stop := range []bool{false, true} {
		for _, w := range []int{1, 2, 3} {
			for _, wt := range []simhash.Weighting{simhash.TF, simhash.LogTF, simhash.Binary} {
				o := simhash.Options{Pipeline: simhash.PipelineV3, Shingle: w, Weighting: wt}
				name := fmt.Sprintf("v3 w=%d %v", w, wt)
				if stop {
					o.StopWords = simhash.EnglishStopWords()
					name += " stop words"
				}
				f, err := simhash.New(o)
				if err != nil {
					return nil, err
				}
				rs = append(rs, Reader{name, document(f)})
			}
		}
	}
	return rs, nil
}

// FeatureChart names the readers the charts of FeatureReaders' report show.
var FeatureChart = []string{"v3 w=1 tf", "v3 w=2 tf", "v3 w=3 tf", "v3 w=2 logtf", "v3 w=1 tf stop words"}

// DefaultReader names the reader of the command's default: pipeline v3,
// read by content; PreviousReader that of indexes made with v2.
const (
	DefaultReader  = "v3 (default: numbers >= 0.1)"
	PreviousReader = "v2 (numbers 0.1)"
)

// ChartReaders are the readers the report's charts show.
var ChartReaders = []string{"v1 text (before: add --text)", "v1 read by content", PreviousReader, DefaultReader, "v3 --skip-nav"}

// document reads a file by its content, as the command does.
func document(f *simhash.Fingerprinter) func([]byte) (uint64, bool) {
	return func(raw []byte) (uint64, bool) {
		fp, err := f.Document(bytes.NewReader(raw), simhash.ReadAuto)
		return fp, err == nil
	}
}

// ReleaseResult scores one Reader on one collection.
type ReleaseResult struct {
	Collection string `json:"collection"`
	Reader     string `json:"reader"`
	// Near pairs: same path, Jaccard >= NearJaccard; Changed those of them
	// whose visible text differs.
	Near, Changed int
	// NearWithin[k], ChangedWithin[k]: those within distance k.
	NearWithin, ChangedWithin []int
	// ChangedByLength: recall at k = 3 of changed pairs by the old page's
	// tokens: < 300, 300-3000, >= 3000 (and the count of each).
	ChangedByLength     [3]float64 `json:"changed_recall_k3_by_length"`
	ChangedByLengthN    [3]int     `json:"changed_by_length_n"`
	Cross               int        `json:"cross_pairs"`
	CrossWithin         []int      `json:"cross_unrelated_within"`
	NoFingerprint       int        `json:"files_without_fingerprint"`
	RecallK3, ChangedK3 float64
	FalseRateK3         float64
}

func lengthClass(tokens int) int {
	switch {
	case tokens < 300:
		return 0
	case tokens < 3000:
		return 1
	}
	return 2
}

// Evaluate fingerprints both releases with rd and scores the pairs: every
// cross pair within MaxK has its Jaccard computed, and counts as a false
// match only below UnrelatedJaccard.
func (r *Release) Evaluate(rd Reader) ReleaseResult {
	res := ReleaseResult{Collection: r.Name, Reader: rd.Name, NearWithin: make([]int, MaxK+1),
		ChangedWithin: make([]int, MaxK+1), CrossWithin: make([]int, MaxK+1)}
	fps := func(pages []Page) ([]uint64, []bool) {
		fp, ok := make([]uint64, len(pages)), make([]bool, len(pages))
		parallel(len(pages), func(i int) { fp[i], ok[i] = rd.Fp(pages[i].Raw) })
		return fp, ok
	}
	oldFP, oldOK := fps(r.Old)
	newFP, newOK := fps(r.New)
	for _, ok := range append(slices.Clone(oldOK), newOK...) {
		if !ok {
			res.NoFingerprint++
		}
	}
	var lenWithin [3]int
	for _, p := range r.Pairs {
		if p.Jaccard < NearJaccard {
			continue
		}
		res.Near++
		c := lengthClass(r.Old[p.Old].Tokens)
		if p.Changed {
			res.Changed++
			res.ChangedByLengthN[c]++
		}
		if !oldOK[p.Old] || !newOK[p.New] {
			continue
		}
		d := bits.OnesCount64(oldFP[p.Old] ^ newFP[p.New])
		for k := d; k <= MaxK; k++ {
			res.NearWithin[k]++
			if p.Changed {
				res.ChangedWithin[k]++
			}
		}
		if p.Changed && d <= 3 {
			lenWithin[c]++
		}
	}
	for c := range lenWithin {
		res.ChangedByLength[c] = ratio(lenWithin[c], res.ChangedByLengthN[c])
	}
	paired := map[[2]int]bool{}
	for _, p := range r.Pairs {
		paired[[2]int{p.Old, p.New}] = true
	}
	rows := make([][]int, len(r.Old))
	parallel(len(r.Old), func(i int) {
		row := make([]int, MaxK+1)
		for j := range r.New {
			if !oldOK[i] || !newOK[j] || paired[[2]int{i, j}] {
				continue
			}
			d := bits.OnesCount64(oldFP[i] ^ newFP[j])
			if d > MaxK || r.jaccard(i, j) >= UnrelatedJaccard {
				continue
			}
			for k := d; k <= MaxK; k++ {
				row[k]++
			}
		}
		rows[i] = row
	})
	res.Cross = len(r.Old)*len(r.New) - len(r.Pairs)
	for _, row := range rows {
		for k, n := range row {
			res.CrossWithin[k] += n
		}
	}
	res.RecallK3 = ratio(res.NearWithin[3], res.Near)
	res.ChangedK3 = ratio(res.ChangedWithin[3], res.Changed)
	res.FalseRateK3 = float64(res.CrossWithin[3]) / float64(max(res.Cross, 1))
	return res
}

// MinHashResult is the quality bar: MinHash with MinHashPerms permutations
// over the ground truth's own shingles, a pair matched when its estimated
// Jaccard is at least MinHashThreshold.
type MinHashResult struct {
	Collection      string  `json:"collection"`
	RecallNear      float64 `json:"recall_near"`
	RecallChanged   float64 `json:"recall_changed"`
	CrossSampled    int     `json:"cross_pairs_sampled"`
	CrossFalse      int     `json:"cross_unrelated_matched"`
	FalseRate       float64 `json:"unrelated_rate"`
	BytesPerDocment int     `json:"bytes_per_document"`
}

// MinHash parameters of the quality bar.
const (
	MinHashPerms     = 128
	MinHashThreshold = 0.8
	minHashCross     = 2_000_000 // cross pairs sampled (all of them when fewer)
)

func minHash(sh []uint64) []uint64 {
	sig := make([]uint64, MinHashPerms)
	for i := range sig {
		sig[i] = ^uint64(0)
	}
	for _, h := range sh {
		x := h
		for i := range sig {
			x = x*0x9e3779b97f4a7c15 + uint64(i)*0xd1b54a32d192ed03 + 1
			y := x ^ x>>31
			y *= 0x94d049bb133111eb
			y ^= y >> 29
			if y < sig[i] {
				sig[i] = y
			}
		}
	}
	return sig
}

func estimate(a, b []uint64) float64 {
	n := 0
	for i := range a {
		if a[i] == b[i] {
			n++
		}
	}
	return float64(n) / float64(len(a))
}

// EvaluateMinHash scores the quality bar on the collection.
func (r *Release) EvaluateMinHash(seed uint64) MinHashResult {
	sigs := func(pages []Page) [][]uint64 {
		s := make([][]uint64, len(pages))
		parallel(len(pages), func(i int) { s[i] = minHash(pages[i].Shingles) })
		return s
	}
	old, nw := sigs(r.Old), sigs(r.New)
	res := MinHashResult{Collection: r.Name, BytesPerDocment: MinHashPerms * 8}
	res.RecallNear, res.RecallChanged = r.recall(func(p ReleasePair) bool {
		return estimate(old[p.Old], nw[p.New]) >= MinHashThreshold
	})
	paired := map[[2]int]bool{}
	for _, p := range r.Pairs {
		paired[[2]int{p.Old, p.New}] = true
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	total := len(r.Old) * len(r.New)
	for n := 0; n < min(total, minHashCross); n++ {
		i, j := n/len(r.New), n%len(r.New)
		if total > minHashCross {
			i, j = rng.IntN(len(r.Old)), rng.IntN(len(r.New))
		}
		if paired[[2]int{i, j}] || r.Old[i].Tokens == 0 || r.New[j].Tokens == 0 {
			continue // MinHash has nothing to hash of a page without words
		}
		res.CrossSampled++
		if estimate(old[i], nw[j]) >= MinHashThreshold && r.jaccard(i, j) < UnrelatedJaccard {
			res.CrossFalse++
		}
	}
	res.FalseRate = float64(res.CrossFalse) / float64(max(res.CrossSampled, 1))
	return res
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// errNoReleases is LoadReleases' error for a folder without collections.
var errNoReleases = errors.New("no collections (run bench/quality/fetch-releases.sh)")

// LoadReleases reads every collection under dir: dir/NAME/old and
// dir/NAME/new.
func LoadReleases(dir string) ([]*Release, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*", "old"))
	if err != nil {
		return nil, err
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("%s: %w", dir, errNoReleases)
	}
	var out []*Release
	for _, o := range names {
		base := filepath.Dir(o)
		r, err := LoadRelease(filepath.Base(base), o, filepath.Join(base, "new"))
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}

// htmlWords writes the visible text of an HTML page to w: every text but
// that of script, style, template and noscript, each element's text
// apart.
func htmlWords(r io.Reader, w *strings.Builder) error {
	z := html.NewTokenizer(r)
	hidden := 0
	for {
		switch z.Next() {
		case html.ErrorToken:
			if z.Err() == io.EOF {
				return nil
			}
			return z.Err()
		case html.TextToken:
			if hidden == 0 {
				w.Write(z.Text())
			}
		case html.StartTagToken:
			name, _ := z.TagName()
			switch a := atom.Lookup(name); {
			case a == atom.Script, a == atom.Style, a == atom.Template, a == atom.Noscript, string(name) == "metadata":
				hidden++
			}
			w.WriteByte(' ')
		case html.EndTagToken:
			name, _ := z.TagName()
			switch a := atom.Lookup(name); {
			case a == atom.Script, a == atom.Style, a == atom.Template, a == atom.Noscript, string(name) == "metadata":
				hidden = max(0, hidden-1)
			}
			w.WriteByte(' ')
		}
	}
}
