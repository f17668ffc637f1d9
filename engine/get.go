package engine

import (
	"context"
	"errors"
	"fmt"

	"github.com/cockroachdb/pebble/v2"
)

// Get returns the document with the id, or ErrNotFound.
func (e *DB) Get(ctx context.Context, id uint64) (Doc, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return Doc{}, ErrClosed
	}
	for _, m := range []*memtable{e.mem, e.imm} {
		if m == nil {
			continue
		}
		if d, ok := m.docs[id]; ok {
			if !d.live {
				return Doc{}, fmt.Errorf("%w: document %d", ErrNotFound, id)
			}
			return Doc{ID: id, Fingerprint: d.fp, Name: d.name}, nil
		}
	}
	v, c, err := e.st.snap.Get(docKey(id))
	if errors.Is(err, pebble.ErrNotFound) {
		return Doc{}, fmt.Errorf("%w: document %d", ErrNotFound, id)
	}
	if err != nil {
		return Doc{}, err
	}
	defer c.Close()
	fp, name, err := parseDocValue(id, v)
	if err != nil {
		return Doc{}, err
	}
	return Doc{ID: id, Fingerprint: fp, Name: name}, nil
}

// NextID returns one more than the largest id stored (1 for an empty
// index): where a caller that numbers its documents itself can go on.
func (e *DB) NextID(ctx context.Context) (uint64, error) {
	e.mu.RLock()
	defer e.mu.RUnlock()
	if e.closed {
		return 0, ErrClosed
	}
	var top uint64
	for _, m := range []*memtable{e.mem, e.imm} {
		if m == nil {
			continue
		}
		for id, d := range m.docs {
			if d.live {
				top = max(top, id)
			}
		}
	}
	lo, hi := spaceBounds(spaceDocs)
	it, err := e.st.snap.NewIter(&pebble.IterOptions{LowerBound: lo, UpperBound: hi})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	for ok := it.Last(); ok; ok = it.Prev() {
		id, err := parseDocKey(it.Key())
		if err != nil {
			return 0, err
		}
		if !e.hidden(id) {
			top = max(top, id)
			break
		}
	}
	if err := it.Error(); err != nil {
		return 0, err
	}
	if top == ^uint64(0) {
		return 0, fmt.Errorf("%w: the largest id, 2^64-1, is taken", ErrInput)
	}
	return top + 1, nil
}
