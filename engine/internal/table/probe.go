package table

import (
	"slices"
	"sync"

	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
)

// probeState is one table's probe for a query: the permuted query, its
// range, and where in the table the range starts.
type probeState struct {
	pq, lo, hi uint64
	j          int          // first block that may hold lo
	b          *cache.Entry // block j, if it was cached
	held       bool         // b is what block j's slot held (table.Index.StartCached)
	i          int          // b.Packed.LowerBound(lo)
	at         uint64       // b.Packed.At(i) once guessed
	// more are the range's blocks after j that readMisses read, in order
	// (nil where it read none): the probe takes them from here, as a
	// cache full of other queries' blocks may have let them go already.
	more []*cache.Entry
}

// ProbeAll finds the fingerprints within distance k of q in every table and
// calls add for each. A probe is a chain of dependent reads: the block
// directory, the block's cache slot, the packed block, each likely a cache
// miss in a large index, and on their own they would run one after
// another, table after table. The tables are independent, so ProbeAll takes
// each step for every table before the next: the core then overlaps the
// tables' misses; the blocks not cached are read together (readMisses).
// Ranges that span blocks finish on the one-table path.
func (r *Reader) ProbeAll(q uint64, k int, add func(fp uint64, d int)) error {
	return r.ProbeAlong(q, k, add, nil)
}

// Along is a span of keys that ProbeAlong reads with the table blocks its
// probes miss, in their submission, where the snapshot reads keys itself
// (store.Snapshot.ReadMany) and the disk has reads to spare: what the
// caller may need next (a query's own postings, units.Ahead), at no round
// of its own.
type Along struct {
	Span [2][]byte
	// Read holds the span's blocks once read (nil: not read), for the
	// caller to scan if it needs them; it releases them.
	Read *store.Spans
}

// ProbeAlong is ProbeAll reading along (nil: nothing) with the blocks.
func (r *Reader) ProbeAlong(q uint64, k int, add func(fp uint64, d int), along *Along) error {
	tabs := r.Design
	// On the stack for the optimiser's designs up to K = 6 (28 tables, a
	// text index's): a warm query allocates nothing.
	var stack [32]probeState
	ps := stack[:0]
	if len(tabs) > len(stack) {
		ps = make([]probeState, 0, len(tabs))
	}
	for t := range tabs {
		pq := tabs[t].Permute(q)
		lo, hi := tabs[t].Range(pq)
		ps = append(ps, probeState{pq: pq, lo: lo, hi: hi})
	}
	for t := range ps {
		ps[t].j, ps[t].b, ps[t].held = r.Tables[t].StartCached(ps[t].lo)
	}
	hits := 0
	for t := range ps {
		if ti := &r.Tables[t]; ps[t].j < ti.Len() {
			b := ps[t].b
			if !ps[t].held {
				b = ti.Slot(ps[t].j).Peek()
			}
			if ps[t].b = r.Cache.Mark(b); ps[t].b != nil {
				hits++
			}
		}
	}
	r.Cache.Hit(hits)
	var vs *views // where blocks read and not cached are decoded
	if hits < len(ps) {
		vs = viewPool.Get().(*views)
		defer vs.release()
		if err := r.readMisses(ps, vs, along); err != nil {
			return err
		}
	}
	for t := range ps {
		if b := ps[t].b; b != nil {
			i := b.Packed.Guess(ps[t].lo)
			if i < b.Packed.Len() {
				ps[t].at = b.Packed.At(i) // the load walk starts with, for every table at once
			}
			ps[t].i = i
		}
	}
	for t := range ps {
		if b := ps[t].b; b != nil {
			ps[t].i = b.Packed.Walk(ps[t].lo, ps[t].i)
		}
	}
	for t := range ps {
		if err := r.probe(t, &ps[t], k, add, vs); err != nil {
			return err
		}
	}
	return nil
}

// manyReader reads many keys, and spans of keys, at once where Mapped
// says it can (store.Snapshot.ReadMany).
type manyReader interface {
	Mapped() bool
	ReadMany(r store.Reads) (missedKeys []int, sp *store.Spans, err error)
}

// maxMissReads bounds the block reads that probes issue together, across
// queries, unless one query's are the only ones; maxQueryReads bounds one
// query's.
const (
	maxMissReads  = 32
	maxQueryReads = 128
)

// readMisses reads, all at once, the blocks that the probes will scan and
// the cache does not hold: every block of each range, or, past
// maxQueryReads of them, the first of each table. A cold query then waits
// for one round of reads, as long as the disk overlaps them, rather than
// one read per table and per block. Reading only a block a store page (the
// page's other blocks come with it) left a range's next page to a round of
// its own whenever the range's first block lay late in its page, and the
// store's pages do not start where the blocks do. The blocks read are
// cached, or decoded into vs where the cache does not admit them (stored),
// and kept for the probe (probeState.keep). Where the snapshot reads
// blocks itself (a read-only store: store.Snapshot.GetMany), they go to the
// disk in one submission from this goroutine; the rest each on a goroutine
// of its own. (The goroutines get their own records, not ps, which would
// then escape to the heap on the warm path too.) The submission carries
// along's span while the probes of other queries have no more than
// maxMissReads reads in flight: a read the query may not need, which
// would only queue at a disk they keep busy. The query's own reads do not
// count: where its ranges span many blocks (a large index of few tables)
// they are many, and without the span every match waits for a second round.
func (r *Reader) readMisses(ps []probeState, vs *views, along *Along) error {
	type read struct {
		t, j int
		b    *cache.Entry
		err  error
	}
	reads := make([]read, 0, len(ps)+4) // a block a table, and a few more
	for t := range ps {
		ti := &r.Tables[t]
		for j := ps[t].j; j < ti.Len(); j++ {
			switch {
			case j == ps[t].j:
				if ps[t].b == nil {
					reads = append(reads, read{t: t, j: j})
				}
			case ti.Slot(j).Peek() == nil:
				reads = append(reads, read{t: t, j: j})
			}
			if ti.Key(j) >= ps[t].hi {
				break
			}
		}
	}
	if len(reads) > maxQueryReads { // the first blocks only
		reads = slices.DeleteFunc(reads, func(rd read) bool { return rd.j != ps[rd.t].j })
	}
	if len(reads) == 0 {
		return nil
	}
	if mr, ok := r.Snap.(manyReader); ok && mr.Mapped() {
		// All of them in one submission, on this goroutine: no thread
		// each, so however many other queries read.
		keys := make([][]byte, len(reads))
		kb := make([]byte, 0, len(reads)*format.TableKeyLen) // the keys, back to back
		for i, rd := range reads {
			kb = format.AppendTableKey(kb, format.SpaceTables, rd.t, r.Tables[rd.t].Key(rd.j))
			keys[i] = kb[i*format.TableKeyLen : len(kb) : len(kb)]
		}
		rs := store.Reads{Keys: keys, Get: func(i int, v []byte) error {
			rd := &reads[i]
			// Counted as Block counts it; another probe may have cached it.
			if rd.b = r.Cache.Get(r.Tables[rd.t].Slot(rd.j)); rd.b == nil {
				rd.b, rd.err = r.stored(rd.t, rd.j, v, vs)
			}
			return nil
		}}
		n, inFlight := int64(len(keys)), int64(0)
		if r.Reads != nil {
			inFlight = r.Reads.Add(n)
		}
		if along != nil && inFlight-n <= maxMissReads {
			rs.Spans = [][2][]byte{along.Span}
		}
		missed, sp, err := mr.ReadMany(rs)
		if r.Reads != nil {
			r.Reads.Add(-n)
		}
		if along != nil && rs.Spans != nil {
			along.Read = sp
		} else {
			sp.Release()
		}
		if err == nil {
			left := reads[:0]
			for i, rd := range reads {
				switch {
				case len(missed) > 0 && missed[0] == i: // in order
					missed = missed[1:]
					left = append(left, rd)
				case rd.err != nil:
					return rd.err
				default:
					ps[rd.t].keep(rd.j, rd.b)
				}
			}
			reads = left
		}
		// Else each block's read through Pebble says what is wrong, and
		// where, as a probe's would.
	}
	if len(reads) < 2 { // one read: probe reads it as it goes
		return nil
	}
	// Reads on goroutines together help a query wait less while the disk
	// has reads to spare; once other queries keep it busy, more reads at once only
	// queue there (and hold a thread each), so the probe reads as it goes.
	if n := int64(len(reads)); r.Reads.Add(n) > max(maxMissReads, n) {
		r.Reads.Add(-n)
		return nil
	}
	defer r.Reads.Add(-int64(len(reads)))
	var wg sync.WaitGroup
	for i := range reads {
		wg.Add(1)
		rd := &reads[i]
		read := func() {
			defer wg.Done()
			rd.b, rd.err = r.fetch(rd.t, rd.j, vs)
		}
		if r.Workers != nil {
			r.Workers.Go(read)
		} else {
			go read()
		}
	}
	wg.Wait()
	for _, rd := range reads { // the first table's error, as a probe table by table says
		if rd.err != nil {
			return rd.err
		}
		ps[rd.t].keep(rd.j, rd.b)
	}
	return nil
}

// keep holds b, block j of p's range that readMisses read, for the probe.
func (p *probeState) keep(j int, b *cache.Entry) {
	if j == p.j {
		p.b = b
		return
	}
	for len(p.more) < j-p.j {
		p.more = append(p.more, nil)
	}
	p.more[j-p.j-1] = b
}

// probe scans table t for p's range from block p.j on, reading blocks that
// ProbeAll did not find in the cache (into vs, if given and the cache does
// not admit them).
func (r *Reader) probe(t int, p *probeState, k int, add func(fp uint64, d int), vs *views) error {
	tb := &r.Design[t]
	keys := r.Tables[t].Keys()
	for j := p.j; j < len(keys); j++ {
		b, i := p.b, p.i
		if j != p.j {
			b = nil
			if x := j - p.j - 1; x < len(p.more) {
				b = p.more[x]
			}
		}
		if j != p.j || b == nil {
			if b == nil {
				var err error
				if b, err = r.fetch(t, j, vs); err != nil {
					return err
				}
			}
			i = b.Packed.LowerBound(p.lo)
		}
		b.Scan(i, p.lo, p.hi, p.pq, k, func(v uint64, d int) { add(tb.Unpermute(v), d) })
		if keys[j] >= p.hi {
			break
		}
	}
	return nil
}
