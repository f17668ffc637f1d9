package simhash

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/simhashdb/simhashdb/internal/mix"
)

// Weighting says how a feature's occurrences in a document become its weight.
type Weighting int

const (
	// TF weighs a feature by its term frequency: every occurrence counts once.
	// It needs no per-document table, so a document of any size streams
	// through in constant memory.
	TF Weighting = iota
	// LogTF weighs a feature by 1 + ln(tf), damping words a document repeats.
	LogTF
	// Binary weighs every distinct feature 1, however often it occurs.
	Binary
)

func (w Weighting) String() string {
	switch w {
	case TF:
		return "tf"
	case LogTF:
		return "logtf"
	case Binary:
		return "binary"
	}
	return fmt.Sprintf("Weighting(%d)", int(w))
}

// DefaultShingle is the default number of consecutive tokens in a feature,
// chosen by the evaluation in bench/quality (see README.md): windows of
// tokens keep unrelated documents that share a vocabulary apart, which single
// words do not.
const DefaultShingle = 2

// MaxShingle bounds Options.Shingle.
const MaxShingle = 64

// Pipeline is a version of the way a Fingerprinter reads text into weighted
// features. Fingerprints made by different pipelines are not comparable, so
// a collection keeps the pipeline its fingerprints were made with.
type Pipeline int

const (
	// PipelineV1 weighs every occurrence of a feature alike and reads all
	// the visible text of HTML. It is the zero value, so Options written
	// before pipelines had versions keep their fingerprints.
	PipelineV1 Pipeline = iota
	// PipelineV2 weighs a feature holding a number (a token of digits only)
	// NumberWeight: renumbered chapters, versions and dates repeated in
	// headings and tables of contents move a fingerprint little, where
	// under V1 they decided it.
	PipelineV2
	// PipelineV3 weighs a feature holding a number by the document's
	// length: NumberWeight in a long one, up to 1 in a short one (see
	// NumberFeatures). And Document with ReadAuto reads more kinds of
	// files by their content: XML as markup (its text, so that an SVG
	// image has no words, where its path data were numbers) and manual
	// pages' roff source as the text man shows.
	PipelineV3
	// LatestPipeline is the pipeline new collections should use.
	LatestPipeline = PipelineV3
)

// NumberWeight is the weight of a feature holding a number under
// PipelineV2, against 1 for one of words alone (bench/quality chose it),
// and under PipelineV3 in a long document.
const NumberWeight = 0.1

// NumberFeatures sets how PipelineV3 weighs a feature holding a number in a
// document of n features: NumberFeatures/n, between NumberWeight (from 500
// features on) and 1 (up to 50). In a long page numbers are mostly
// numbering that changes between releases; in a short one (release notes,
// one per version) they are much of what tells a page from its siblings.
// bench/quality chose it.
const NumberFeatures = 50

func (p Pipeline) String() string { return fmt.Sprintf("v%d", int(p)+1) }

// ParsePipeline reads a Pipeline's name: v1, v2 or v3.
func ParsePipeline(s string) (Pipeline, error) {
	for p := PipelineV1; p <= LatestPipeline; p++ {
		if s == p.String() {
			return p, nil
		}
	}
	return 0, fmt.Errorf("%w: pipeline %q: want %s", ErrOptions, s, pipelineNames())
}

// pipelineNames lists the pipelines' names for messages: "v1, v2 or v3".
func pipelineNames() string {
	var b strings.Builder
	for p := PipelineV1; p <= LatestPipeline; p++ {
		switch {
		case p == LatestPipeline:
			b.WriteString(" or ")
		case p > PipelineV1:
			b.WriteString(", ")
		}
		b.WriteString(p.String())
	}
	return b.String()
}

// ErrOptions is wrapped by the errors of New for invalid options.
var ErrOptions = errors.New("simhash: invalid options")

// Options configure a Fingerprinter. The zero value is the default pipeline:
// NFKC, case folding, words of any script with CJK as character bigrams,
// shingles of DefaultShingle tokens, term-frequency weights, xxHash64.
type Options struct {
	// Tokenizer splits text into tokens; nil means Words{}.
	Tokenizer Tokenizer
	// Shingle is the width w of the moving window of tokens that makes one
	// feature (simhash-cpp's shingles): 1 makes every token a feature. A
	// document with fewer than w tokens gives one feature of all of them.
	// 0 means DefaultShingle.
	Shingle int
	// Weighting turns occurrence counts into weights; the default is TF.
	Weighting Weighting
	// IDF, when set, multiplies every feature's weight by its inverse
	// document frequency, so words every document uses count for little.
	IDF *IDF
	// StopWords are dropped before shingling; see EnglishStopWords. They pass
	// through the Tokenizer's normalisation, so case does not matter.
	StopWords []string
	// Hash maps features to 64 bits; nil means XXHash.
	Hash Hash
	// Pipeline is the version of the pipeline; the zero value is
	// PipelineV1, LatestPipeline the one new collections should take.
	Pipeline Pipeline
	// NumberWeight, from PipelineV2 on, is the weight of a feature
	// holding a number (under PipelineV3, in a long document); 0 means the
	// package's NumberWeight.
	NumberWeight float64
	// SkipNavigation reads HTML without its navigation (see
	// Fingerprinter.HTML): for sites whose menus and sidebars change
	// between releases while their pages do not. Where the navigation is
	// stable and large (a sidebar holding the page's own contents), it
	// keeps fingerprints closer to what a reader sees, so it is off by
	// default (bench/quality measures both).
	SkipNavigation bool
	// TiesToOne sets a fingerprint bit whose counter is exactly zero. The
	// default leaves it 0, so an empty document has fingerprint 0; seed 001's
	// Java sets it (its test is ">= 0").
	TiesToOne bool
}

// Fingerprinter turns documents into 64-bit SimHash fingerprints. It is safe
// for concurrent use.
type Fingerprinter struct {
	opts    Options
	tok     Tokenizer
	words   bool // tok is Words: use the scanner of the sketch, no allocation
	hash    Hash
	w       int
	stop    map[uint64]struct{}
	counts  bool // weights need per-document counts
	numbers bool // features holding a number weigh numberW
	byLen   bool // and more in a short document (PipelineV3)
	numberW float64
	pool    sync.Pool
}

// New returns a Fingerprinter for opts.
func New(opts Options) (*Fingerprinter, error) {
	f := &Fingerprinter{opts: opts, tok: opts.Tokenizer, hash: opts.Hash, w: opts.Shingle}
	if f.tok == nil {
		f.tok = Words{}
	}
	_, f.words = f.tok.(Words)
	if f.hash == nil {
		f.hash = XXHash
	}
	switch {
	case f.w == 0:
		f.w = DefaultShingle
	case f.w < 0 || f.w > MaxShingle:
		return nil, fmt.Errorf("%w: Shingle %d is outside 1..%d", ErrOptions, opts.Shingle, MaxShingle)
	}
	if opts.Pipeline < PipelineV1 || opts.Pipeline > LatestPipeline {
		return nil, fmt.Errorf("%w: unknown Pipeline %d", ErrOptions, int(opts.Pipeline))
	}
	f.numbers = opts.Pipeline >= PipelineV2
	f.byLen = opts.Pipeline >= PipelineV3
	f.numberW = cmp.Or(opts.NumberWeight, NumberWeight)
	if f.numberW < 0 || math.IsNaN(f.numberW) || math.IsInf(f.numberW, 0) {
		return nil, fmt.Errorf("%w: NumberWeight %v: want a positive weight", ErrOptions, opts.NumberWeight)
	}
	switch opts.Weighting {
	case TF, LogTF, Binary:
	default:
		return nil, fmt.Errorf("%w: unknown Weighting %d", ErrOptions, int(opts.Weighting))
	}
	f.counts = opts.Weighting != TF || opts.IDF != nil
	if len(opts.StopWords) > 0 {
		f.stop = make(map[uint64]struct{}, len(opts.StopWords))
		for _, s := range opts.StopWords {
			f.tok.Tokenize([]byte(s), func(t []byte) { f.stop[f.hash(t)] = struct{}{} })
		}
	}
	f.pool.New = func() any { return &sketch{f: f} }
	return f, nil
}

// Default returns a Fingerprinter with the default Options.
func Default() *Fingerprinter {
	f, err := New(Options{})
	if err != nil {
		panic(err) // the zero Options are valid
	}
	return f
}

// Options returns the options f was built with.
func (f *Fingerprinter) Options() Options { return f.opts }

// Bytes returns the fingerprint of text.
func (f *Fingerprinter) Bytes(text []byte) uint64 {
	s := f.get()
	defer f.put(s)
	s.text(text)
	return s.sum()
}

// Text returns the fingerprint of text.
func (f *Fingerprinter) Text(text string) uint64 {
	// Tokenizers only read their input, so the string's bytes serve as they are.
	return f.Bytes(unsafe.Slice(unsafe.StringData(text), len(text)))
}

// String is Text's former name (a String method that is not a
// fmt.Stringer misleads).
//
// Deprecated: use Text.
func (f *Fingerprinter) String(text string) uint64 { return f.Text(text) }

// chunkSize is how much of a stream is tokenized at a time.
const chunkSize = 64 << 10

// Reader returns the fingerprint of the text read from r until io.EOF. It
// reads in chunks, so a document of any size needs constant memory with TF
// weights (the other weightings keep one counter per distinct feature).
func (f *Fingerprinter) Reader(r io.Reader) (uint64, error) {
	s := f.get()
	defer f.put(s)
	if err := s.stream(r); err != nil {
		return 0, err
	}
	return s.sum(), nil
}

// Features calls emit with the hash of every feature of text, in order,
// repeats included: the input of Sum, of an IDF table, or of a similarity
// measure over the same features.
func (f *Fingerprinter) Features(r io.Reader, emit func(feature uint64)) error {
	s := f.get()
	defer f.put(s)
	s.emit = emit
	defer func() { s.emit = nil }()
	if err := s.stream(r); err != nil {
		return err
	}
	s.flushShort()
	return nil
}

func (f *Fingerprinter) get() *sketch { return f.pool.Get().(*sketch) }

func (f *Fingerprinter) put(s *sketch) {
	s.reset()
	f.pool.Put(s)
}

// Feature is a hashed feature and its weight, for callers who extract their
// own features.
type Feature struct {
	Hash   uint64
	Weight float64
}

// Sum returns the simhash of weighted features: bit i is set when the weights
// of the features whose hash has bit i set outweigh the others. Weights that
// are zero, NaN or infinite are ignored. With no features it returns 0.
func Sum(features []Feature) uint64 {
	var v Vector
	for _, ft := range features {
		v.Add(ft.Hash, ft.Weight)
	}
	return v.Sum(false)
}

// sketch is the per-document state of a Fingerprinter.
type sketch struct {
	f      *Fingerprinter
	scan   wordScanner
	ring   [MaxShingle]uint64 // hashes of the last w tokens, at n mod MaxShingle
	n      int                // tokens seen
	vec    Vector
	nums   Vector // features holding a number, when their weight waits for the length
	counts map[uint64]uint32
	// numMask has bit i set when the token i tokens back is a number;
	// numeric holds the features with one, when counts are kept.
	numMask  uint64
	numeric  map[uint64]struct{}
	features int          // features made: 0 means the document had no text
	emit     func(uint64) // Features: report instead of summing
	onToken  func(uint64) // DocumentTokens: told every token's hash
	tokFn    func([]byte)
	buf      []byte
}

func (s *sketch) reset() {
	s.n, s.numMask, s.features = 0, 0, 0
	s.onToken = nil
	s.vec.Reset()
	s.nums.Reset()
	clear(s.counts)
	clear(s.numeric)
}

func (s *sketch) text(b []byte) {
	if s.tokFn == nil {
		s.tokFn = s.token
	}
	if s.f.words {
		s.scan.scan(b, s.tokFn)
		return
	}
	s.f.tok.Tokenize(b, s.tokFn)
}

// stream tokenizes r chunk by chunk, cutting each chunk after its last ASCII
// separator so that no token is split.
func (s *sketch) stream(r io.Reader) error {
	if cap(s.buf) < chunkSize {
		s.buf = make([]byte, chunkSize)
	}
	buf := s.buf[:chunkSize]
	filled := 0
	for {
		n, err := r.Read(buf[filled:])
		filled += n
		if err == io.EOF {
			s.text(buf[:filled])
			return nil
		}
		if err != nil {
			return err
		}
		if filled < len(buf) {
			continue
		}
		cut := lastSeparator(buf[:filled])
		s.text(buf[:cut])
		filled = copy(buf, buf[cut:filled])
	}
}

// lastSeparator returns the offset just past the last character of b that
// cannot be inside a token (ASCII or Unicode space and punctuation, such as
// the ideographic full stop), or, when there is none, the start of b's last
// (possibly incomplete) UTF-8 sequence.
func lastSeparator(b []byte) int {
	for i := len(b); i > 0; {
		c := b[i-1]
		if c < utf8.RuneSelf {
			if !isWordASCII[c] {
				return i
			}
			i--
			continue
		}
		r, n := utf8.DecodeLastRune(b[:i])
		if r != utf8.RuneError && !isCJK(r) && !isWordRune(r) {
			return i
		}
		i -= n
	}
	for i := len(b) - 1; i > 0; i-- {
		if utf8.RuneStart(b[i]) {
			return i
		}
	}
	return len(b)
}

func (s *sketch) token(t []byte) {
	h := s.f.hash(t)
	if s.onToken != nil {
		s.onToken(h)
	}
	if s.f.stop != nil {
		if _, ok := s.f.stop[h]; ok {
			return
		}
	}
	num := s.f.numbers && isNumber(t)
	w := s.f.w
	if w == 1 {
		s.feature(h, num)
		return
	}
	s.ring[s.n%MaxShingle] = h
	s.numMask <<= 1
	if num {
		s.numMask |= 1
	}
	s.n++
	if s.n >= w {
		s.feature(s.shingle(w), s.numMask&lowBits(w) != 0)
	}
}

// lowBits returns a mask of the n lowest bits.
func lowBits(n int) uint64 { return ^uint64(0) >> (64 - n) }

// isNumber reports whether a token is digits only.
func isNumber(t []byte) bool {
	for i := 0; i < len(t); {
		if c := t[i]; c < utf8.RuneSelf {
			if c < '0' || c > '9' {
				return false
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(t[i:])
		if !unicode.IsDigit(r) {
			return false
		}
		i += n
	}
	return len(t) > 0
}

// shingle hashes the last m tokens, oldest first: a polynomial over the
// token hashes (so order matters), then one finaliser to spread it.
func (s *sketch) shingle(m int) uint64 {
	x := uint64(m)
	for j := s.n - m; j < s.n; j++ {
		x = x*0x9e3779b97f4a7c15 + s.ring[j%MaxShingle]
	}
	// Mixed, so that the hash of a window of token hashes is as well
	// spread as a token hash.
	return mix.SplitMix64(x)
}

// flushShort makes the one feature of a document shorter than a shingle.
func (s *sketch) flushShort() {
	if s.n > 0 && s.n < s.f.w {
		s.feature(s.shingle(s.n), s.numMask&lowBits(s.n) != 0)
	}
}

// feature adds a feature; num says it holds a number.
func (s *sketch) feature(h uint64, num bool) {
	s.features++
	switch {
	case s.emit != nil:
		s.emit(h)
	case s.f.counts:
		if s.counts == nil {
			s.counts = make(map[uint64]uint32)
		}
		s.counts[h]++
		if num {
			if s.numeric == nil {
				s.numeric = make(map[uint64]struct{})
			}
			s.numeric[h] = struct{}{}
		}
	case num && s.f.byLen:
		s.nums.AddUnit(h)
	case num:
		s.vec.Add(h, s.f.numberW)
	default:
		s.vec.AddUnit(h)
	}
}

func (s *sketch) sum() uint64 {
	s.flushShort()
	numberW := s.f.numberW
	if s.f.byLen {
		numberW = max(numberW, min(1, NumberFeatures/float64(max(s.features, 1))))
	}
	if s.f.counts {
		for h, c := range s.counts {
			var w float64
			switch s.f.opts.Weighting {
			case LogTF:
				w = 1 + math.Log(float64(c))
			case Binary:
				w = 1
			default:
				w = float64(c)
			}
			if s.f.opts.IDF != nil {
				w *= s.f.opts.IDF.Weight(h)
			}
			if _, ok := s.numeric[h]; ok {
				w *= numberW
			}
			s.vec.Add(h, w)
		}
	}
	if s.f.byLen && !s.f.counts {
		return s.vec.sumWith(&s.nums, numberW, s.f.opts.TiesToOne)
	}
	return s.vec.Sum(s.f.opts.TiesToOne)
}
