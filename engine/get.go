package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"

	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
)

// Get returns the document with the id, or ErrNotFound.
func (db *DB) Get(ctx context.Context, id uint64) (_ Doc, err error) {
	if err := ctx.Err(); err != nil {
		return Doc{}, err
	}
	defer func() { err = storeErr(err) }()
	if err := db.rlockOpen(); err != nil {
		return Doc{}, err
	}
	defer db.mu.RUnlock()
	lv := db.lockedView()
	if d, ok := lv.memDoc(id); ok {
		if !d.Live {
			return Doc{}, fmt.Errorf("%w: document %d", ErrNotFound, id)
		}
		out := Doc{ID: id, Fingerprint: d.FP, Name: d.Name}
		db.outDoc(&out)
		return out, nil
	}
	v, c, err := db.st.snap.Get(format.DocKey(id))
	if errors.Is(err, store.ErrKeyNotFound) {
		return Doc{}, fmt.Errorf("%w: document %d", ErrNotFound, id)
	}
	if err != nil {
		return Doc{}, err
	}
	defer c.Close()
	fp, name, err := format.ParseDocValue(id, v)
	if err == nil && db.sketch > 0 {
		name, err = postingName(db.st.snap, id, fp)
	}
	if err != nil {
		return Doc{}, err
	}
	out := Doc{ID: id, Fingerprint: fp, Name: name}
	db.outDoc(&out)
	return out, nil
}

// NextID returns one more than the largest id stored (1 for an empty
// index): where a caller that numbers its documents itself can go on.
func (db *DB) NextID(ctx context.Context) (_ uint64, err error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	defer func() { err = storeErr(err) }()
	if err := db.rlockOpen(); err != nil {
		return 0, err
	}
	defer db.mu.RUnlock()
	var top uint64
	v := db.lockedView()
	for _, d := range v.memDocs() {
		top = max(top, d.ID)
	}
	lo, hi := format.SpaceBounds(format.SpaceDocs)
	it, err := db.st.snap.NewIter(store.IterOptions{Lower: lo, Upper: hi})
	if err != nil {
		return 0, err
	}
	defer it.Close()
	for ok := it.Last(); ok; ok = it.Prev() {
		id, err := format.ParseDocKey(it.Key())
		if err != nil {
			return 0, err
		}
		if !v.hidden(id) {
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

// Docs returns every stored document, by id: the index as one state saw
// it when the iteration began. Writers do not wait for the caller; Close
// waits for the iteration to end. It is how an index is read back
// whole (simhashdb export), to rebuild it with another K or design.
func (db *DB) Docs(ctx context.Context) iter.Seq2[Doc, error] {
	return storeSeq(func(yieldOut func(Doc, error) bool) {
		yield := func(d Doc, err error) bool {
			db.outDoc(&d)
			return yieldOut(d, err)
		}
		if err := ctx.Err(); err != nil {
			yield(Doc{}, err)
			return
		}
		v, err := db.pinView()
		if err != nil {
			yield(Doc{}, err)
			return
		}
		defer v.unpin(db)
		st, mem := v.st, v.memDocs()
		slices.SortFunc(mem, func(a, b Doc) int { return cmp.Compare(a.ID, b.ID) })
		lo, hi := format.SpaceBounds(format.SpaceDocs)
		it, err := st.snap.NewIter(store.IterOptions{Lower: lo, Upper: hi})
		if err != nil {
			yield(Doc{}, err)
			return
		}
		defer it.Close()
		n := 0
		for ok := it.First(); ok; ok = it.Next() {
			if n++; n%4096 == 0 && ctx.Err() != nil {
				yield(Doc{}, ctx.Err())
				return
			}
			id, err := format.ParseDocKey(it.Key())
			if err != nil {
				yield(Doc{}, err)
				return
			}
			for len(mem) > 0 && mem[0].ID < id {
				if !yield(mem[0], nil) {
					return
				}
				mem = mem[1:]
			}
			if v.hidden(id) {
				continue // the memtable has its newest write, in mem if live
			}
			val, err := it.Value()
			if err == nil {
				var d Doc
				d.ID = id
				d.Fingerprint, d.Name, err = format.ParseDocValue(id, val)
				if err == nil && db.sketch > 0 {
					d.Name, err = postingName(st.snap, id, d.Fingerprint)
				}
				if err == nil {
					if !yield(d, nil) {
						return
					}
					continue
				}
			}
			yield(Doc{}, err)
			return
		}
		if err := it.Error(); err != nil {
			yield(Doc{}, err)
			return
		}
		for _, d := range mem {
			if !yield(d, nil) {
				return
			}
		}
	})
}
