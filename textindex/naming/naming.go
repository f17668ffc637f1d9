// Package naming gives documents named by a path their ids: the same name,
// the same id, so that adding a folder again replaces what changed and
// skips what did not, instead of storing every file again under new ids.
// The command's add and the server's POST /v1/documents share it.
package naming

import (
	"context"
	"errors"
	"fmt"
	"iter"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/pathid"
)

// setting names the setting that says how an index gives ids to
// documents named by a path: hashed in indexes created since it was
// stored; without it, the ids were given in order, and IDs reads the names
// stored to find them.
const (
	setting = "simhashdb.naming"
	hashed  = "path-hash-53"
)

// What adding a named document does.
const (
	Added = iota
	Replaced
	Unchanged
)

// Index is what IDs reads and keeps its setting in: an *engine.DB, or a
// served index through package client.
type Index interface {
	Get(ctx context.Context, id uint64) (engine.Doc, error)
	Docs(ctx context.Context) iter.Seq2[engine.Doc, error]
	Meta(ctx context.Context, name string) ([]byte, error)
	SetMeta(ctx context.Context, name string, value []byte) error
}

// IDs gives documents named by a path their ids. It is not safe for
// concurrent use.
type IDs struct {
	db Index
	// byName is the names of an index that gave ids in order (nil for
	// one that hashes them), and next the next id in order.
	byName map[string]uint64
	next   uint64
	// taken holds the ids given in this run, not all committed yet.
	taken map[uint64]string
	// counts by Added, Replaced, Unchanged.
	counts [3]int
}

// Init marks a new index as one that hashes names into ids.
func Init(ctx context.Context, db Index) error {
	return db.SetMeta(ctx, setting, []byte(hashed))
}

// ErrInOrder is New's error, with hashedOnly, for an index that gave ids
// in order: finding a name there means reading every document's.
var ErrInOrder = errors.New("the index was made before documents named by a path got ids of their own: give each its id")

// New reads how db names documents; with hashedOnly, an index that gave
// ids in order is ErrInOrder rather than read through.
func New(ctx context.Context, db Index, hashedOnly bool) (*IDs, error) {
	p := &IDs{db: db, taken: map[uint64]string{}}
	v, err := db.Meta(ctx, setting)
	switch {
	case err == nil && string(v) == hashed:
		return p, nil
	case err == nil:
		return nil, fmt.Errorf("the index's naming setting %q: this build knows %q only", v, hashed)
	case !errors.Is(err, engine.ErrNotFound):
		return nil, err
	}
	empty, err := isEmpty(ctx, db)
	if err != nil {
		return nil, err
	}
	switch {
	case empty:
		// Nothing named yet (an index made by a program, not the
		// command): it hashes from now on.
		if err := Init(ctx, db); err != nil {
			return nil, err
		}
		return p, nil
	case hashedOnly:
		return nil, ErrInOrder
	}
	// An index made before: its documents' names say which ids are whose,
	// and new ones go on after the largest (Docs is in id order).
	p.byName = map[string]uint64{}
	for d, err := range db.Docs(ctx) {
		if err != nil {
			return nil, err
		}
		if d.Name != "" {
			p.byName[d.Name] = d.ID
		}
		p.next = d.ID + 1
	}
	return p, nil
}

// isEmpty reports whether db stores no document.
func isEmpty(ctx context.Context, db Index) (bool, error) {
	next, stop := iter.Pull2(db.Docs(ctx))
	defer stop()
	_, err, ok := next()
	return !ok, err
}

// ID returns the id of the document named name with fingerprint fp and
// sketch (empty in an index without sketches), and whether storing it
// adds, replaces or leaves a document as it is: a text whose fingerprint
// stays while its sketch changes is replaced.
func (p *IDs) ID(ctx context.Context, name string, fp uint64, sketch string) (uint64, int, error) {
	if p.byName != nil {
		id, ok := p.byName[name]
		if !ok {
			id = p.next
			p.next++
			p.byName[name] = id
			return p.count(id, name, Added)
		}
		return p.compare(ctx, id, name, fp, sketch)
	}
	// A collision takes the next free id; the names tell.
	for id := pathid.Hash(name); ; id++ {
		if n, ok := p.taken[id]; ok {
			if n == name {
				return id, Unchanged, nil // named twice in one run
			}
			continue
		}
		d, err := p.db.Get(ctx, id)
		if errors.Is(err, engine.ErrNotFound) {
			return p.count(id, name, Added)
		}
		if err != nil {
			return 0, 0, err
		}
		if d.Name == name {
			return p.compare(ctx, id, name, fp, sketch)
		}
	}
}

// compare says whether the stored document id changes with fp and sketch.
func (p *IDs) compare(ctx context.Context, id uint64, name string, fp uint64, sketch string) (uint64, int, error) {
	if n, ok := p.taken[id]; ok && n == name {
		return id, Unchanged, nil
	}
	d, err := p.db.Get(ctx, id)
	switch {
	case errors.Is(err, engine.ErrNotFound):
		return p.count(id, name, Added)
	case err != nil:
		return 0, 0, err
	case d.Fingerprint == fp && d.Sketch == sketch && d.Name == name:
		return p.count(id, name, Unchanged)
	}
	return p.count(id, name, Replaced)
}

func (p *IDs) count(id uint64, name string, what int) (uint64, int, error) {
	p.taken[id] = name
	p.counts[what]++
	return id, what, nil
}

// NotStored takes back the count of a document that ID counted as what
// (Added or Replaced) and that was not stored after all (add --if-new
// found a near-duplicate): Summary counts what the index holds.
func (p *IDs) NotStored(what int) {
	p.counts[what]--
}

// Summary is the counts as a sentence.
func (p *IDs) Summary() string {
	return fmt.Sprintf("%d added, %d replaced, %d unchanged", p.counts[Added], p.counts[Replaced], p.counts[Unchanged])
}
