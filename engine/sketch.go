package engine

import (
	"errors"
	"fmt"
	"strings"

	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
)

// MaxSketch is the longest sketch a document keeps, in bytes.
const MaxSketch = format.MaxSketch

// SketchSize returns the bytes of the sketch each document of the index
// keeps (Options.SketchSize), 0 if it keeps none.
func (db *DB) SketchSize() int { return db.sketch }

// storedDocs checks docs (checkDoc) and returns them as the index stores
// them: with sketches, each name preceded by its sketch (a copy; without,
// docs itself). The engine keeps a document's sketch wherever it keeps its
// name, so that a query finds both in the same read.
func (db *DB) storedDocs(docs []Doc) ([]Doc, error) {
	for i := range docs {
		if err := db.checkDoc(&docs[i]); err != nil {
			return nil, err
		}
	}
	if db.sketch == 0 {
		return docs, nil
	}
	out := make([]Doc, len(docs))
	for i, d := range docs {
		out[i] = Doc{ID: d.ID, Fingerprint: d.Fingerprint, Name: format.StoredName(d.Sketch, d.Name)}
	}
	return out, nil
}

// checkDoc refuses a document the index does not store: its name
// (validDoc), or a sketch of another size than the index keeps.
func (db *DB) checkDoc(d *Doc) error {
	if err := validDoc(d); err != nil {
		return err
	}
	if n := len(d.Sketch); n != db.sketch {
		if db.sketch == 0 {
			return fmt.Errorf("%w: document %d: a sketch of %d bytes, and this index keeps none (Options.SketchSize at creation)", ErrInput, d.ID, n)
		}
		return fmt.Errorf("%w: document %d: a sketch of %d bytes, and this index keeps one of %d with each document", ErrInput, d.ID, n, db.sketch)
	}
	return nil
}

// outDoc turns a document as stored into the caller's: its sketch split off
// its name. A stored name too short to hold a sketch (damage Check
// reports) reads as a name without one.
func (db *DB) outDoc(d *Doc) {
	if db.sketch == 0 {
		return
	}
	sk, name, err := format.SplitStored(d.ID, d.Name, db.sketch)
	if err != nil {
		return
	}
	d.Sketch, d.Name = sk, name
}

// outMatches is outDoc for each of ms.
func (db *DB) outMatches(ms []Match) {
	if db.sketch == 0 {
		return
	}
	for i := range ms {
		db.outDoc(&ms[i].Doc)
	}
}

// docValueName is the name a document's value keeps: in an index with
// sketches none, since its posting keeps name and sketch (which queries
// read) and storing them twice would cost more than the lookup that Get
// and Docs make of the posting; else the name.
func docValueName[S ~string | ~[]byte](db *DB, stored S) S {
	if db.sketch > 0 {
		var none S
		return none
	}
	return stored
}

// postingName returns the stored name of document id of fingerprint fp
// from its posting in r: Get's and Docs' read in an index with sketches.
func postingName(r reader, id, fp uint64) (string, error) {
	v, c, err := r.Get(format.PostingKey(fp, id))
	if errors.Is(err, store.ErrKeyNotFound) {
		return "", fmt.Errorf("%w: document %d: no posting of its fingerprint %016x", ErrCorrupt, id, fp)
	}
	if err != nil {
		return "", err
	}
	defer c.Close()
	return string(v), nil
}

// checkStoredName reports a stored name of a posting that cannot hold the
// index's sketch, or one in a document value of an index whose document
// values keep none (docValueName): Check's test of each.
func (db *DB) checkStoredName(id uint64, stored []byte, docValue bool) error {
	if db.sketch == 0 {
		return nil
	}
	if docValue {
		if len(stored) > 0 {
			return fmt.Errorf("%w: document %d: a value of %d bytes, where this index keeps the fingerprint alone", ErrCorrupt, id, 8+len(stored))
		}
		return nil
	}
	_, name, err := format.SplitStored(id, string(stored), db.sketch)
	if err == nil && strings.IndexByte(name, 0) >= 0 {
		// Names hold no NUL (validDoc); one that does is a sketch's
		// bytes misplaced.
		err = fmt.Errorf("%w: document %d: stored name holds a NUL byte", ErrCorrupt, id)
	}
	return err
}
