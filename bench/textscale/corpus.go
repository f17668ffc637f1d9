// Package textscale measures near-duplicate detection of text at scale:
// a seeded corpus of document families made from real sentences, written
// as a dataset, given to simhashdb (add --dataset, then find-all --db) and
// to a MinHash LSH baseline in the same run, each a child process whose
// processor time and peak memory the kernel reports; the pairs each finds
// are scored against the families' planted pairs and the true Jaccard
// similarity of every pair reported.
package textscale

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"unicode"
)

// Corpus generates documents by family: family f is an original of 60 to
// 200 words and 0 to 2 copies, each with 1 to 5% of its words replaced and,
// one time in three, a sentence dropped. A document's text depends only on
// the seed, its family and its place in it, so any document is made again
// from its id to score a pair.
type Corpus struct {
	Seed      uint64
	sentences [][]string // the real sentences, as words
	vocab     []string   // their words, each once
}

// NewCorpus reads the sentences of the text files in dir (the license
// texts bundled with the command).
func NewCorpus(dir string, seed uint64) (*Corpus, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.txt"))
	if err != nil {
		return nil, err
	}
	slices.Sort(paths)
	c := &Corpus{Seed: seed}
	seen := map[string]bool{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			return nil, err
		}
		for s := range strings.FieldsFuncSeq(string(b), func(r rune) bool { return r == '.' || r == ';' || r == ':' }) {
			w := strings.Fields(s)
			if len(w) < 5 {
				continue
			}
			c.sentences = append(c.sentences, w)
			for _, x := range w {
				if !seen[x] {
					seen[x] = true
					c.vocab = append(c.vocab, x)
				}
			}
		}
	}
	if len(c.sentences) < 100 {
		return nil, fmt.Errorf("%s: %d sentences, want at least 100", dir, len(c.sentences))
	}
	return c, nil
}

// ID is the id of copy c (0 the original) of family f.
func ID(f uint64, c int) uint64 { return f*3 + uint64(c) + 1 }

// Member is ID's inverse.
func Member(id uint64) (f uint64, c int) { return (id - 1) / 3, int((id - 1) % 3) }

// Copies is the number of copies of family f.
func (c *Corpus) Copies(f uint64) int {
	return int(rand.New(rand.NewPCG(c.Seed, f<<2|3)).IntN(3))
}

// Doc returns the text of copy i of family f as sentences of words.
func (c *Corpus) Doc(f uint64, i int) [][]string {
	r := rand.New(rand.NewPCG(c.Seed, f<<2))
	want := 60 + r.IntN(141)
	var doc [][]string
	for n := 0; n < want; {
		// A real sentence with a third of its words drawn from the whole
		// vocabulary: sentences as varied as a large corpus's, in words a
		// real text uses.
		s := slices.Clone(c.sentences[r.IntN(len(c.sentences))])
		for j := range s {
			if r.IntN(3) == 0 {
				s[j] = c.vocab[r.IntN(len(c.vocab))]
			}
		}
		doc = append(doc, s)
		n += len(s)
	}
	if i == 0 {
		return doc
	}
	r = rand.New(rand.NewPCG(c.Seed, f<<2|uint64(i)))
	edit := 0.01 + 0.04*r.Float64()
	for _, s := range doc {
		for j := range s {
			if r.Float64() < edit {
				s[j] = c.vocab[r.IntN(len(c.vocab))]
			}
		}
	}
	if len(doc) > 2 && r.IntN(3) == 0 {
		k := r.IntN(len(doc))
		doc = slices.Delete(doc, k, k+1)
	}
	return doc
}

// Text is a document's text.
func Text(doc [][]string) string {
	var b strings.Builder
	for _, s := range doc {
		b.WriteString(strings.Join(s, " "))
		b.WriteString(". ")
	}
	return b.String()
}

// Shingles is the set of a text's 5-word shingles, as the ground truth
// reads them: words of letters and digits, lowercased.
func Shingles(text string) map[string]struct{} {
	w := strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
	s := map[string]struct{}{}
	for i := 0; i+5 <= len(w) || i == 0 && len(w) > 0; i++ {
		s[strings.Join(w[i:min(len(w), i+5)], " ")] = struct{}{}
	}
	return s
}

// Jaccard is the Jaccard similarity of two sets.
func Jaccard(a, b map[string]struct{}) float64 {
	n := 0
	for x := range a {
		if _, ok := b[x]; ok {
			n++
		}
	}
	u := len(a) + len(b) - n
	if u == 0 {
		return 1
	}
	return float64(n) / float64(u)
}

// TextOf is the text of the document id.
func (c *Corpus) TextOf(id uint64) string {
	f, i := Member(id)
	return Text(c.Doc(f, i))
}

// Write writes n documents, family by family, as JSON lines
// {"id", "text"} to path; it returns the families written.
func (c *Corpus) Write(path string, n int) (families uint64, err error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	enc := json.NewEncoder(w)
	written := 0
	for ; written < n; families++ {
		for i := 0; i <= c.Copies(families) && written < n; i++ {
			if err := enc.Encode(map[string]any{"id": ID(families, i), "text": Text(c.Doc(families, i))}); err != nil {
				f.Close()
				return 0, err
			}
			written++
		}
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return 0, err
	}
	return families, f.Close()
}
