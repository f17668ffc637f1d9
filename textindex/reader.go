package textindex

import (
	"fmt"
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
	size    int           // of the sketches, 0 for none
	layout  sketch.Layout // of the records, if size is one's
	banded  bool
	texts   sync.Pool // *sketch.Text
}

// NewReader returns a Reader that fingerprints with f, reads documents as
// reading says (simhash.Document) and sketches them as an index of sketch
// size sketchSize keeps them (engine.DB.SketchSize): none for 0, a sketch
// for sketch.Size, a record for a sketch.Layout's RecordSize. Another size
// is an error that names it.
func NewReader(f *simhash.Fingerprinter, reading simhash.Reading, sketchSize int) (*Reader, error) {
	r := &Reader{f: f, reading: reading, size: sketchSize}
	r.layout, r.banded = sketch.LayoutOfSize(sketchSize)
	if sketchSize != 0 && !SketchedSize(sketchSize) {
		return nil, fmt.Errorf("%w: sketches of %d bytes, which this build does not make", ErrSketchKind, sketchSize)
	}
	r.texts.New = func() any { return sketch.NewText() }
	return r, nil
}

// Sketches reports whether the Reader makes sketches.
func (r *Reader) Sketches() bool { return r.size > 0 }

// SketchSize is the bytes of the sketches (or records) the Reader makes, 0
// if it makes none.
func (r *Reader) SketchSize() int { return r.size }

// Read returns the fingerprint of the document read from in and, if the
// Reader sketches, its sketch (sketch.Size bytes, as engine.Doc.Sketch
// holds it). Its errors are simhash.Document's: simhash.ErrBinary,
// simhash.ErrEmpty, and the reader's.
func (r *Reader) Read(in io.Reader) (fp uint64, sk string, err error) {
	if r.size == 0 {
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
	if r.banded {
		return fp, string(t.AppendRecord(make([]byte, 0, r.size), r.layout)), nil
	}
	s := t.Sketch()
	return fp, string(s[:]), nil
}
