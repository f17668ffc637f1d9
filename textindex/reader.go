package textindex

import (
	"io"
	"sync"

	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/sketch"
)

// Reader reads documents as a text index keeps them: a fingerprint and,
// for an index with sketches, a sketch of the same text, in one read. It
// is safe for concurrent use.
type Reader struct {
	f       *simhash.Fingerprinter
	reading simhash.Reading
	sketch  bool
	texts   sync.Pool // *sketch.Text
}

// NewReader returns a Reader that fingerprints with f, reads documents as
// reading says (simhash.Document) and sketches them if sketches is true.
func NewReader(f *simhash.Fingerprinter, reading simhash.Reading, sketches bool) *Reader {
	r := &Reader{f: f, reading: reading, sketch: sketches}
	r.texts.New = func() any { return sketch.NewText() }
	return r
}

// Sketches reports whether the Reader makes sketches.
func (r *Reader) Sketches() bool { return r.sketch }

// Read returns the fingerprint of the document read from in and, if the
// Reader sketches, its sketch (sketch.Size bytes, as engine.Doc.Sketch
// holds it). Its errors are simhash.Document's: simhash.ErrBinary,
// simhash.ErrEmpty, and the reader's.
func (r *Reader) Read(in io.Reader) (fp uint64, sk string, err error) {
	if !r.sketch {
		fp, err = r.f.Document(in, r.reading)
		return fp, "", err
	}
	t := r.texts.Get().(*sketch.Text)
	defer r.texts.Put(t)
	t.Reset()
	fp, err = r.f.DocumentTokens(in, r.reading, t.Token)
	if err != nil {
		return 0, "", err
	}
	s := t.Sketch()
	return fp, string(s[:]), nil
}
