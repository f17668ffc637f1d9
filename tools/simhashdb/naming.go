package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/cespare/xxhash/v2"
	"github.com/simhashdb/simhashdb/engine"
)

// A document named by a path (add --text, and the lines of "simhashdb
// fingerprint") is the same document each time it is added: its id comes
// from its name, so adding a folder again replaces what changed and skips
// what did not, instead of storing every file again under new ids.

// namingSetting names the setting that says how an index gives ids to
// documents named by a path: namingHash in indexes created since it was
// stored; without it, the ids were given in order, and pathIDs reads the
// names stored to find them.
const (
	namingSetting = "simhashdb.naming"
	namingHash    = "path-hash-53"
)

// What adding a named document did.
const (
	docAdded = iota
	docReplaced
	docUnchanged
)

// pathIDs gives documents named by a path their ids.
type pathIDs struct {
	db *engine.DB
	// byName is the names of an index that gave ids in order (nil for
	// one that hashes them), and next the next id in order.
	byName map[string]uint64
	next   uint64
	// taken holds the ids given in this run, not all committed yet.
	taken map[uint64]string
	// counts by docAdded, docReplaced, docUnchanged.
	counts [3]int
}

// storeNaming marks a new index as one that hashes names into ids.
func storeNaming(ctx context.Context, db *engine.DB) error {
	return db.SetMeta(ctx, namingSetting, []byte(namingHash))
}

// newPathIDs reads how db names documents.
func newPathIDs(ctx context.Context, db *engine.DB) (*pathIDs, error) {
	p := &pathIDs{db: db, taken: map[uint64]string{}}
	v, err := db.Meta(ctx, namingSetting)
	switch {
	case err == nil && string(v) == namingHash:
		return p, nil
	case err == nil:
		return nil, fmt.Errorf("the index's naming setting %q: this build knows %q only", v, namingHash)
	case !errors.Is(err, engine.ErrNotFound):
		return nil, err
	}
	// An index made before: its documents' names say which ids are whose.
	p.byName = map[string]uint64{}
	for d, err := range db.Docs(ctx) {
		if err != nil {
			return nil, err
		}
		if d.Name != "" {
			p.byName[d.Name] = d.ID
		}
	}
	if p.next, err = db.NextID(ctx); err != nil {
		return nil, err
	}
	return p, nil
}

// id returns the id of the document named name with fingerprint fp, and
// whether storing it adds, replaces or leaves a document as it is.
func (p *pathIDs) id(ctx context.Context, name string, fp uint64) (uint64, int, error) {
	if p.byName != nil {
		id, ok := p.byName[name]
		if !ok {
			id = p.next
			p.next++
			p.byName[name] = id
			return p.count(id, name, docAdded)
		}
		return p.compare(ctx, id, name, fp)
	}
	// 53 bits: ids stay exact as JSON numbers. A collision takes the next
	// free id; the names tell.
	for id := max(xxhash.Sum64String(name)&(1<<53-1), 1); ; id++ {
		if n, ok := p.taken[id]; ok {
			if n == name {
				return id, docUnchanged, nil // named twice in one run
			}
			continue
		}
		d, err := p.db.Get(ctx, id)
		if errors.Is(err, engine.ErrNotFound) {
			return p.count(id, name, docAdded)
		}
		if err != nil {
			return 0, 0, err
		}
		if d.Name == name {
			return p.compare(ctx, id, name, fp)
		}
	}
}

// compare says whether the stored document id changes with fp.
func (p *pathIDs) compare(ctx context.Context, id uint64, name string, fp uint64) (uint64, int, error) {
	if n, ok := p.taken[id]; ok && n == name {
		return id, docUnchanged, nil
	}
	d, err := p.db.Get(ctx, id)
	switch {
	case errors.Is(err, engine.ErrNotFound):
		return p.count(id, name, docAdded)
	case err != nil:
		return 0, 0, err
	case d.Fingerprint == fp && d.Name == name:
		return p.count(id, name, docUnchanged)
	}
	return p.count(id, name, docReplaced)
}

func (p *pathIDs) count(id uint64, name string, what int) (uint64, int, error) {
	p.taken[id] = name
	p.counts[what]++
	return id, what, nil
}

// summary is the counts as a sentence.
func (p *pathIDs) summary() string {
	return fmt.Sprintf("%d added, %d replaced, %d unchanged", p.counts[docAdded], p.counts[docReplaced], p.counts[docUnchanged])
}
