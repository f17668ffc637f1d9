package engine

import (
	"context"
	"slices"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/engine/internal/table"
	"github.com/simhashdb/simhashdb/engine/internal/units"
)

// seekPostings positions it at the first posting of fp, if any: a prefix
// seek where the bloom filters hold fingerprints (store.KeyOrder).
func (db *DB) seekPostings(it *store.Iter, fp uint64) bool {
	if db.store.PrefixSeek {
		return it.SeekPrefixGE(format.PostingPrefix(fp))
	}
	return it.SeekGE(format.PostingPrefix(fp))
}

// Query returns every stored document within Hamming distance k of fp,
// nearest first (then by id). k may be at most K.
func (db *DB) Query(ctx context.Context, fp uint64, k int) ([]Match, error) {
	return db.QueryAppend(ctx, nil, fp, k)
}

// QueryAppend is Query appending the matches to dst and returning it: a
// caller that reuses dst (dst[:0]) allocates nothing for a query whose
// blocks and postings are cached, however many it makes.
func (db *DB) QueryAppend(ctx context.Context, dst []Match, fp uint64, k int) (_ []Match, err error) {
	defer func() { err = storeErr(err) }()
	v, err := db.queryView(ctx, k)
	if err != nil {
		return dst, err
	}
	defer db.mu.RUnlock()
	n := len(dst)
	dst, err = db.query(&v, dst, fp, k)
	db.outMatches(dst[n:])
	return dst, err
}

// QueryFingerprints appends to dst every distinct stored fingerprint
// within Hamming distance k of fp, nearest first (then ascending), and
// returns it: the paper's question, whether the index holds a near
// duplicate and which fingerprints, without the documents that hold them.
// Where the writes waiting in memory to be flushed are all of new
// documents, numbered above every flushed one (as NextID numbers them),
// or there are none (after Flush, as in a read-only open of an index
// flushed before it was closed), the tables and the memtables answer it
// alone: on an index larger than memory a query reads its table blocks
// and nothing else (together, in one round of the disk, where the index
// reads through io_uring), where Query also reads its matches' documents.
// While a write in memory deletes or replaces a flushed document, it
// answers from the documents, as Query does.
func (db *DB) QueryFingerprints(ctx context.Context, dst []Near, fp uint64, k int) (_ []Near, err error) {
	defer func() { err = storeErr(err) }()
	v, err := db.queryView(ctx, k)
	if err != nil {
		return dst, err
	}
	defer db.mu.RUnlock()
	return db.queryFingerprints(&v, dst, fp, k)
}

// queryView checks a query of distance k and returns the view it reads,
// with db.mu read-locked: the caller unlocks it, unless there is an error.
func (db *DB) queryView(ctx context.Context, k int) (view, error) {
	if err := ctx.Err(); err != nil {
		return view{}, err
	}
	if err := db.checkDistance(k); err != nil {
		return view{}, err
	}
	if err := db.rlockOpen(); err != nil {
		return view{}, err
	}
	return db.lockedView(), nil
}

// queryFingerprints appends the fingerprints of v within k of q to dst. A
// flushed state's tables hold exactly its documents' fingerprints (Check
// verifies it), so while no memtable writes a flushed document (deleting
// or replacing it), the tables' candidates need no postings, and the
// memtables' need only the memtables.
func (db *DB) queryFingerprints(v *view, dst []Near, q uint64, k int) ([]Near, error) {
	from := len(dst)
	shown, err := v.flushedShown()
	if err != nil {
		return dst, err
	}
	if !shown {
		ms, err := db.query(v, nil, q, k)
		if err != nil {
			return dst, err
		}
		for _, m := range ms {
			dst = append(dst, Near{m.Fingerprint, m.Distance})
		}
	} else {
		if err := v.st.blocks.ProbeAlong(q, k, func(fp uint64, d int) { dst = append(dst, Near{fp, d}) }, nil); err != nil {
			return dst[:from], err
		}
		v.search(q, k, func(fp uint64, d int) {
			if v.memHolds(fp) {
				dst = append(dst, Near{fp, d})
			}
		})
	}
	out := dst[from:]
	slices.SortFunc(out, CompareNear)
	return dst[:from+len(slices.Compact(out))], nil
}

type candidate struct {
	fp uint64
	d  int
}

// query appends the matches of q in v to dst.
func (db *DB) query(v *view, dst []Match, q uint64, k int) ([]Match, error) {
	st := v.st
	// On the stack: a query has a few candidates a table, and a pool
	// misses whenever the goroutine changes processors.
	var stack [64]candidate
	cands := stack[:0]
	add := func(fp uint64, d int) { cands = append(cands, candidate{fp, d}) }
	// A read-only store's cold query reads its own postings unit with
	// its table blocks (units.Ahead).
	var along *table.Along // nil unless the query reads ahead
	var ahead *units.Ahead
	if st.snap.Mapped() {
		if ahead = st.units.Ahead(q); ahead != nil {
			defer ahead.Release()
			along = &table.Along{Span: ahead.Span()}
			defer func() { along.Read.Release() }()
		}
	}
	if err := st.blocks.ProbeAlong(q, k, add, along); err != nil {
		return dst, err
	}
	v.search(q, k, add)
	if along != nil && along.Read != nil {
		for _, c := range cands {
			if ahead.Holds(c.fp) {
				ahead.Keep(db.cache, along.Read)
				break
			}
		}
	}
	if len(cands) == 0 {
		return dst, nil
	}
	var it *store.Iter
	defer func() { st.release(it) }()
	return db.expand(v, cands, &it, dst)
}

// expand appends to dst the documents that hold the candidate fingerprints
// in v (memtables first, then the snapshot's postings, less what the
// memtables replace or delete), nearest first and then by id. *it is the
// postings iterator, opened on first use so that callers with many queries
// share one.
func (db *DB) expand(v *view, cands []candidate, it **store.Iter, dst []Match) ([]Match, error) {
	slices.SortFunc(cands, func(a, b candidate) int { return cmpU64(a.fp, b.fp) })
	cands = slices.CompactFunc(cands, func(a, b candidate) bool { return a.fp == b.fp })
	out, from := dst, len(dst)
	for _, c := range cands {
		out = v.appendMemMatches(out, c)
	}
	for len(cands) > 0 {
		n := min(len(cands), lookupBatch)
		var err error
		if out, err = db.postingsOf(v, it, cands[:n], out); err != nil {
			return dst, err
		}
		cands = cands[n:]
	}
	slices.SortFunc(out[from:], Nearer)
	return out, nil
}

// lookupBatch is how many candidates postingsOf looks up at once.
const lookupBatch = 16

// postingsOf appends the flushed documents of the candidates cs (at most
// lookupBatch) that no memtable hides. A look-up in a cached unit is a
// chain of dependent loads (the unit's slot, the entry's header, the line
// of its pairs), each likely a cache miss; as ProbeAll does for the
// tables, it takes each step for every candidate before the next, so that
// the core overlaps the candidates' misses.
func (db *DB) postingsOf(v *view, it **store.Iter, cs []candidate, out []Match) ([]Match, error) {
	st := v.st
	var bs [lookupBatch]*cache.Entry
	var at [lookupBatch]int
	var first [lookupBatch]uint64 // the fingerprint at at[x], where there is one
	var cold [lookupBatch]uint64
	nc := 0
	for x, c := range cs {
		if bs[x] = st.units.Slot(st.units.Unit(c.fp)).Peek(); bs[x] == nil {
			cold[nc], nc = c.fp, nc+1
		}
	}
	if nc > 0 {
		// The units not cached, read together where the store can.
		if err := st.units.ReadMany(db.cache, st.snap, cold[:nc]); err != nil {
			return nil, err
		}
		for x, c := range cs {
			if bs[x] == nil {
				bs[x] = st.units.Slot(st.units.Unit(c.fp)).Peek()
			}
		}
	}
	for x, c := range cs {
		if b := db.cache.Mark(bs[x]); b != nil && !b.Big {
			at[x] = b.Packed.Guess(c.fp)
			if at[x] < b.Packed.Len() {
				first[x] = b.Packed.At(at[x]) // the load the walk starts with, for every candidate at once
			}
		}
	}
	for x, c := range cs {
		b := bs[x]
		if b == nil || b.Big {
			var err error
			if out, err = db.readPostings(v, it, c.fp, c.d, out); err != nil {
				return nil, err
			}
			continue
		}
		i := at[x]
		if i < b.Packed.Len() {
			i = b.Packed.WalkFrom(c.fp, i, first[x])
		}
		out = unitDocs(v, b, i, c.fp, c.d, out)
	}
	return out, nil
}

// postings appends the flushed documents of fp that no memtable hides,
// reading its unit if it is not cached.
func (db *DB) postings(v *view, it **store.Iter, fp uint64, d int, out []Match) ([]Match, error) {
	// A cached unit needs no iterator: taking one from the pool and giving
	// it back costs more than the look-up.
	units := v.st.units
	if b := db.cache.Load(units.Slot(units.Unit(fp))); b != nil && !b.Big {
		return unitDocs(v, b, b.Packed.LowerBound(fp), fp, d, out), nil
	}
	return db.readPostings(v, it, fp, d, out)
}

// readPostings is postings for a unit not cached, or too big to cache:
// read with the iterator *it, which it opens if nil.
func (db *DB) readPostings(v *view, it **store.Iter, fp uint64, d int, out []Match) ([]Match, error) {
	st := v.st
	if *it == nil {
		var err error
		if *it, err = st.postingsIter(); err != nil {
			return nil, err
		}
	}
	b, ok, err := st.units.Read(db.cache, *it, fp)
	if err != nil {
		return nil, err
	} else if !ok {
		return db.seekDocs(v, *it, fp, d, out)
	}
	return unitDocs(v, b, b.Packed.LowerBound(fp), fp, d, out), nil
}

// unitDocs appends the documents of fp in unit b from its posting i on
// (b.Packed.LowerBound(fp)) that no memtable hides. Each id is in its
// fingerprint's line, or the next: the walk that found the fingerprint
// brought it in.
func unitDocs(v *view, b *cache.Entry, i int, fp uint64, d int, out []Match) []Match {
	pk := &b.Packed
	for ; i < pk.Len() && pk.At(i) == fp; i++ {
		if id := pk.ID(i); !v.hidden(id) {
			out = append(out, Match{Doc{ID: id, Fingerprint: fp, Name: b.Name(i)}, d})
		}
	}
	return out
}

// seekDocs appends the documents of fp read from the postings with pi: a
// unit too big to cache.
func (db *DB) seekDocs(v *view, pi *store.Iter, fp uint64, d int, out []Match) ([]Match, error) {
	for db.seekPostings(pi, fp); pi.Valid(); pi.Next() {
		f, id, err := format.ParsePostingKey(pi.Key())
		if err != nil {
			return nil, err
		}
		if f != fp {
			break
		}
		if v.hidden(id) {
			continue
		}
		v, err := pi.Value()
		if err != nil {
			return nil, err
		}
		out = append(out, Match{Doc{ID: id, Fingerprint: fp, Name: string(v)}, d})
	}
	return out, pi.Error()
}

func cmpU64(a, b uint64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
