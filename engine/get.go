package engine

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"sync/atomic"

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
	return db.pinnedSeq(ctx, db.viewDocs)
}

// pinnedSeq is a sequence of one pinned view's documents, read by read.
func (db *DB) pinnedSeq(ctx context.Context, read func(context.Context, *view, func(Doc, error) bool)) iter.Seq2[Doc, error] {
	return storeSeq(func(yield func(Doc, error) bool) {
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
		read(ctx, v, yield)
	})
}

// Snapshot is the index at one moment, to be read whole more than once
// while writes go on: each of its sequences gives the same documents in
// the same order every time. It holds that moment's memtables and files
// until Close, which DB.Close waits for.
type Snapshot struct {
	db     *DB
	v      *view
	closed atomic.Bool
}

// Snapshot returns the index as it is now.
func (db *DB) Snapshot() (*Snapshot, error) {
	v, err := db.pinView()
	if err != nil {
		return nil, err
	}
	return &Snapshot{db: db, v: v}, nil
}

// Docs is DB.Docs of the snapshot: every document, by id.
func (s *Snapshot) Docs(ctx context.Context) iter.Seq2[Doc, error] {
	return s.seq(ctx, s.db.viewDocs)
}

// DocsByFingerprint returns every document by fingerprint, then id. In
// an index that keeps sketches it reads each document's record once, in
// order, where Docs looks each up.
func (s *Snapshot) DocsByFingerprint(ctx context.Context) iter.Seq2[Doc, error] {
	return s.seq(ctx, s.db.viewDocsByFingerprint)
}

func (s *Snapshot) seq(ctx context.Context, read func(context.Context, *view, func(Doc, error) bool)) iter.Seq2[Doc, error] {
	return storeSeq(func(yield func(Doc, error) bool) {
		switch {
		case s.closed.Load():
			yield(Doc{}, ErrClosed)
		case ctx.Err() != nil:
			yield(Doc{}, ctx.Err())
		default:
			read(ctx, s.v, yield)
		}
	})
}

// Close gives the snapshot back; its sequences then answer ErrClosed.
func (s *Snapshot) Close() error {
	if s.closed.CompareAndSwap(false, true) {
		s.v.unpin(s.db)
	}
	return nil
}

// viewDocs gives v's documents by id.
func (db *DB) viewDocs(ctx context.Context, v *view, yieldOut func(Doc, error) bool) {
	yield := func(d Doc, err error) bool {
		db.outDoc(&d)
		return yieldOut(d, err)
	}
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
}

// viewDocsByFingerprint gives v's documents by fingerprint, then id: the
// postings, which hold each document's stored name, read in order, and
// the memtables' documents merged in.
func (db *DB) viewDocsByFingerprint(ctx context.Context, v *view, yieldOut func(Doc, error) bool) {
	yield := func(d Doc, err error) bool {
		db.outDoc(&d)
		return yieldOut(d, err)
	}
	mem := v.memDocs()
	slices.SortFunc(mem, func(a, b Doc) int { return cmp.Or(cmp.Compare(a.Fingerprint, b.Fingerprint), cmp.Compare(a.ID, b.ID)) })
	stop := errors.New("stop")
	n := 0
	err := store.Scan(v.st.snap, format.SpacePrefix(format.SpacePostings), func(key, val []byte) error {
		if n++; n%4096 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		fp, id, err := format.ParsePostingKey(key)
		if err != nil {
			return err
		}
		for len(mem) > 0 && (mem[0].Fingerprint < fp || mem[0].Fingerprint == fp && mem[0].ID < id) {
			if !yield(mem[0], nil) {
				return stop
			}
			mem = mem[1:]
		}
		if v.hidden(id) {
			return nil // the memtable has its newest write, in mem if live
		}
		if !yield(Doc{ID: id, Fingerprint: fp, Name: string(val)}, nil) {
			return stop
		}
		return nil
	})
	if err == stop {
		return
	}
	if err != nil {
		yield(Doc{}, err)
		return
	}
	for _, d := range mem {
		if !yield(d, nil) {
			return
		}
	}
}
