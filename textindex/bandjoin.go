package textindex

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"math/bits"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/spill"
	"github.com/simhashdb/simhashdb/sketch"
)

// DefaultJoinMemory is the memory the band join's sorts hold by default:
// what it holds besides is a band key's documents' ids.
const DefaultJoinMemory = 256 << 20

// JoinOptions are how Pairs joins an index whose records carry band keys:
// where its sorts keep their runs and how much memory they hold, and
// whom it tells of its progress.
type JoinOptions struct {
	// TempDir is the folder of the sorts' runs, the system's temporary
	// folder if empty. They take about 50 bytes a band key of a document
	// (its place and sketch) and are removed when the join ends.
	TempDir string
	// Memory is the bytes the sorts hold, DefaultJoinMemory if 0.
	Memory int
	// Progress, if not nil, is called as the join goes: at each stage's
	// start and every 65,536 documents or pairs.
	Progress func(JoinProgress)
}

// JoinProgress is where the band join stands.
type JoinProgress struct {
	// Stage is "keys" (the documents read for their band keys),
	// "candidates" (the pairs that share a key, gathered), "first" (the
	// candidates' first documents attached) or "verify" (the pairs
	// verified and given).
	Stage string
	// Docs are the documents read so far in the stage; Candidates the
	// pairs that share a key ("candidates": compared, each time a key
	// pairs them) or those of them verified, made distinct (from "first"
	// on); Pairs the pairs given ("verify").
	Docs, Candidates, Pairs int64
	// Spilled is the bytes the sorts have written.
	Spilled int64
}

// ErrChanged is the band join's error when the documents it reads once a
// pass are not the same from one pass to the next: a served index written
// while PairsOf ran. Run it again.
var ErrChanged = errors.New("textindex: the documents changed while the join read them")

// PairsOf is PairsWith over documents that scan gives, read once for each
// of the join's four passes and the same each time, in the same order
// (the documents of a served index's shards, one after the other): each
// with a record of sketchSize bytes (the layout of an index made by
// OptionsAt). A pass that finds other documents than the one before it
// stops with ErrChanged.
func PairsOf(ctx context.Context, scan func(context.Context) iter.Seq2[engine.Doc, error], sketchSize int, threshold float64, o JoinOptions) iter.Seq2[Pair, error] {
	l, ok := sketch.LayoutOfSize(sketchSize)
	if !ok {
		return func(yield func(Pair, error) bool) {
			yield(Pair{}, fmt.Errorf("%w: sketches of %d bytes carry no band keys", engine.ErrInput, sketchSize))
		}
	}
	if err := CheckSimilarity(sketchSize, threshold); err != nil {
		return func(yield func(Pair, error) bool) { yield(Pair{}, err) }
	}
	return func(yield func(Pair, error) bool) {
		j := &bandJoin{ctx: ctx, scan: scan, l: l, o: o}
		if j.o.Memory <= 0 {
			j.o.Memory = DefaultJoinMemory
		}
		defer j.close()
		if err := j.run(threshold, yield, false); err != nil {
			yield(Pair{}, err)
		}
	}
}

// bandPairs returns every pair of db's documents, each with a record of
// layout l, that share a band key and whose sketches estimate at least
// threshold similar. Four passes over one snapshot of the index, each in
// time linear in the documents and the candidates, memory within
// o.Memory: the documents' band keys are sorted, the documents of each
// key paired, the pairs sorted and made distinct, then joined with the
// documents twice (first document, then second) and verified. Documents
// are known by their place in the snapshot's fingerprint order, which
// every pass reads in turn; the pairs come in that order of their second
// document, then their first's.
func bandPairs(ctx context.Context, db *engine.DB, l sketch.Layout, threshold float64, o JoinOptions) iter.Seq2[Pair, error] {
	return func(yield func(Pair, error) bool) {
		j := &bandJoin{ctx: ctx, db: db, l: l, o: o}
		if j.o.Memory <= 0 {
			j.o.Memory = DefaultJoinMemory
		}
		defer j.close()
		if err := j.run(threshold, yield, false); err != nil {
			yield(Pair{}, err)
		}
	}
}

type bandJoin struct {
	ctx context.Context
	db  *engine.DB // nil: scan is given
	// snap is the snapshot of db the passes read; scan reads them.
	snap  *engine.Snapshot
	scan  func(context.Context) iter.Seq2[engine.Doc, error]
	l     sketch.Layout
	o     JoinOptions
	sorts []*spill.Sorter
	p     JoinProgress
}

func (j *bandJoin) sorter(share int) *spill.Sorter {
	s := spill.NewSorter(j.o.TempDir, j.o.Memory/share)
	j.sorts = append(j.sorts, s)
	return s
}

func (j *bandJoin) close() {
	for _, s := range j.sorts {
		s.Close()
	}
}

func (j *bandJoin) report(stage string) {
	j.p.Stage = stage
	j.p.Spilled = 0
	for _, s := range j.sorts {
		j.p.Spilled += s.Spilled()
	}
	if j.o.Progress != nil {
		j.o.Progress(j.p)
	}
}

// tick reports every 65,536 steps and says whether the context is done.
func (j *bandJoin) tick(stage string, n int64) error {
	if n&(1<<16-1) != 0 {
		return nil
	}
	j.report(stage)
	return j.ctx.Err()
}

// run gives the pairs to yield; keep leaves the snapshot open for the
// caller (who closes it) when run returns no error.
func (j *bandJoin) run(threshold float64, yield func(Pair, error) bool, keep bool) (err error) {
	if j.db != nil {
		if j.snap, err = j.db.Snapshot(); err != nil {
			return err
		}
		j.scan = j.snap.DocsByFingerprint
		defer func() {
			if !keep || err != nil {
				j.snap.Close()
			}
		}()
	}
	// Two sorts are alive at a time (one merged while the next fills):
	// each holds half the memory.
	keys := j.sorter(2)
	j.report("keys")
	var v []byte
	for d, err := range j.scan(j.ctx) {
		if err != nil {
			return err
		}
		if err := j.checkRecord(d); err != nil {
			return err
		}
		rec := []byte(d.Sketch)
		v = binary.LittleEndian.AppendUint64(append(v[:0], rec[:sketch.Size]...), d.ID)
		for i := range j.l.Bands {
			if err := keys.Add(uint64(i)<<32|uint64(sketch.BandKey(rec, i)), uint64(j.p.Docs), v); err != nil {
				return err
			}
		}
		j.p.Docs++
		if err := j.tick("keys", j.p.Docs); err != nil {
			return err
		}
	}

	cands := j.sorter(2)
	j.report("candidates")
	if err := j.candidates(keys, cands, threshold); err != nil {
		return err
	}
	keys.Close()

	firsts := j.sorter(2)
	j.report("first")
	if err := j.attachFirst(cands, firsts); err != nil {
		return err
	}
	cands.Close()

	j.report("verify")
	return j.verify(firsts, threshold, yield)
}

// checkRecord refuses a document whose record is not of the layout.
func (j *bandJoin) checkRecord(d engine.Doc) error {
	if len(d.Sketch) != j.l.RecordSize() {
		return fmt.Errorf("%w: document %d: a sketch of %d bytes, the index's records are of %d", engine.ErrCorrupt, d.ID, len(d.Sketch), j.l.RecordSize())
	}
	return nil
}

// member is a document of a band key's group: its place, id and sketch.
type member struct {
	place, id uint64
	sk        sketch.Sketch
}

// candidates pairs the documents of each band key whose sketches reach
// threshold: (a, b), a < b, their places, once however many keys they
// share. Verified here, in the group, a key that a template puts in
// thousands of documents makes pairs of the near ones only, not of all.
func (j *bandJoin) candidates(keys, out *spill.Sorter, threshold float64) error {
	m, err := keys.Merge()
	if err != nil {
		return err
	}
	var group []member // in order of place: the keys' records are sorted by it
	var key uint64
	var n int64
	var ids []byte // the pair's ids, which the later passes check
	pair := func() error {
		for x, a := range group {
			for _, b := range group[x+1:] {
				if sketch.Similarity(a.sk, b.sk) >= threshold {
					ids = binary.LittleEndian.AppendUint64(binary.LittleEndian.AppendUint64(ids[:0], a.id), b.id)
					if err := out.Add(a.place, b.place, ids); err != nil {
						return err
					}
				}
				if n++; n&(1<<16-1) == 0 {
					j.p.Candidates = n
					if err := j.tick("candidates", n); err != nil {
						return err
					}
				}
			}
		}
		return nil
	}
	for m.Next() {
		r := m.Record()
		if r.A != key || len(group) == 0 {
			if err := pair(); err != nil {
				return err
			}
			group, key = group[:0], r.A
		}
		mb := member{place: r.B, id: binary.LittleEndian.Uint64(r.V[sketch.Size:])}
		copy(mb.sk[:], r.V)
		group = append(group, mb)
	}
	if err := m.Err(); err != nil {
		return err
	}
	return pair()
}

// appendDocValue appends a document's value in the join's runs: id and
// fingerprint (8 bytes each, little-endian), then its stored sketch and
// name, the sketch RecordSize bytes.
func appendDocValue(dst []byte, d engine.Doc) []byte {
	dst = binary.LittleEndian.AppendUint64(dst, d.ID)
	dst = binary.LittleEndian.AppendUint64(dst, d.Fingerprint)
	dst = append(dst, d.Sketch...)
	return append(dst, d.Name...)
}

func (j *bandJoin) docOfValue(v []byte) engine.Doc {
	size := j.l.RecordSize()
	return engine.Doc{ID: binary.LittleEndian.Uint64(v), Fingerprint: binary.LittleEndian.Uint64(v[8:]), Sketch: string(v[16 : 16+size]), Name: string(v[16+size:])}
}

// docsAt steps through the snapshot's documents by place: at(p) returns
// the document at place p, p not below the last asked.
type docsAt struct {
	next  func() (engine.Doc, error, bool)
	stop  func()
	d     engine.Doc
	place int64 // of d; -1 before the first
}

func (j *bandJoin) docsAt() *docsAt {
	next, stop := iter.Pull2(j.scan(j.ctx))
	return &docsAt{next: next, stop: stop, place: -1}
}

// at returns the document at place p, which must be id.
func (a *docsAt) at(p, id uint64, tick func() error) (engine.Doc, error) {
	for a.place < int64(p) {
		d, err, ok := a.next()
		if !ok {
			return engine.Doc{}, fmt.Errorf("%w: they ended before place %d", ErrChanged, p)
		}
		if err != nil {
			return engine.Doc{}, err
		}
		a.d, a.place = d, a.place+1
		if err := tick(); err != nil {
			return engine.Doc{}, err
		}
	}
	if a.d.ID != id {
		return engine.Doc{}, fmt.Errorf("%w: document %d at place %d, where %d was", ErrChanged, a.d.ID, p, id)
	}
	return a.d, nil
}

// attachFirst joins the distinct candidates, in their first document's
// order, with the snapshot's documents: (b, a) with a's document.
func (j *bandJoin) attachFirst(cands, out *spill.Sorter) error {
	m, err := cands.Merge()
	if err != nil {
		return err
	}
	docs := j.docsAt()
	defer docs.stop()
	var v []byte
	j.p.Docs, j.p.Candidates = 0, 0
	tick := func() error { j.p.Docs++; return j.tick("first", j.p.Docs) }
	for m.Next() {
		r := m.Record()
		d, err := docs.at(r.A, binary.LittleEndian.Uint64(r.V), tick)
		if err != nil {
			return err
		}
		j.p.Candidates++
		if err := j.checkRecord(d); err != nil {
			return err
		}
		v = appendDocValue(append(v[:0], r.V[8:16]...), d) // b's id, then a
		if err := out.Add(r.B, r.A, v); err != nil {
			return err
		}
	}
	return m.Err()
}

// verify joins the candidates with their first documents, in their second
// document's order, with the snapshot's documents, and gives those the
// sketches verify.
func (j *bandJoin) verify(firsts *spill.Sorter, threshold float64, yield func(Pair, error) bool) error {
	m, err := firsts.Merge()
	if err != nil {
		return err
	}
	docs := j.docsAt()
	defer docs.stop()
	j.p.Docs = 0
	tick := func() error { j.p.Docs++; return j.tick("verify", j.p.Docs) }
	for m.Next() {
		r := m.Record()
		d, err := docs.at(r.A, binary.LittleEndian.Uint64(r.V), tick)
		if err != nil {
			return err
		}
		if err := j.checkRecord(d); err != nil {
			return err
		}
		a := j.docOfValue(r.V[8:])
		s, _ := Similarity(a.Sketch, d.Sketch)
		if s < threshold {
			continue
		}
		j.p.Pairs++
		p := Pair{Pair: engine.Pair{A: a, B: d, Distance: bits.OnesCount64(a.Fingerprint ^ d.Fingerprint)}, Similarity: s}
		if a.ID > d.ID {
			p.A, p.B = d, a
		}
		if !yield(p, nil) {
			return nil
		}
	}
	if err := m.Err(); err != nil {
		return err
	}
	j.report("verify")
	return nil
}
