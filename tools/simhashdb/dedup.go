package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/dataset"
	"github.com/simhashdb/simhashdb/textindex"
)

const dedupHelp = `Writes the records of the datasets that remain once near-duplicates are dropped, in
the input's format (JSON lines; Parquet from Parquet) and order: of each group of
near-duplicates (records linked by pairs at least --similarity similar: connected
components) it keeps one, the first or the longest (--keep). A bad record, or one
whose text has no words, is reported as its place and not written.

With --db, a record near a document already in that index (within its K and at least
--similarity similar) is dropped too, and the records kept are added to it, as add
--dataset adds them: deduplication against an older corpus, run by run.

--clusters FILE writes a JSON line for each record of a group of two or more:
{"record": its id (its own, else its position), "group": the position of the record
kept for the group, "kept": true|false}. Positions count records from 1 across the
files in order, bad ones included.

Progress goes to stderr (--progress): records read, candidates, kept, rate and ETA.`

func runDedup(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fl := newFlagSet("dedup", "--dataset FILE... --out FILE [--similarity S] [--keep first|longest] [--clusters FILE] [--db IDX]",
		"  simhashdb dedup --dataset crawl.jsonl.zst --out kept.jsonl.zst --clusters groups.jsonl\n"+
			"  simhashdb dedup --db corpus-idx --dataset new.parquet --out new-kept.parquet\n\n"+dedupHelp, stderr)
	ds := fl.Bool("dataset", false, "the arguments are datasets: JSON lines (plain, gzip or zstd) or Parquet (required: it names what the arguments are, as add's does)")
	var df datasetFlags
	df.register(fl)
	out := fl.String("out", "", "where the records kept go (required); JSON lines are compressed as the name ends: .gz, .zst")
	clusters := fl.String("clusters", "", "write each grouped record's group here, JSON lines")
	keep := fl.String("keep", "first", "which record of a group is kept: first (in the input's order) or longest (the longest text; the first of those)")
	similarity := fl.Float64("similarity", textindex.DefaultSimilarity, "the least estimated Jaccard similarity (of 5-word shingles) of near-duplicates, 0.5 to 1")
	db := fl.String("db", "", "an index of text to deduplicate against and add the records kept to")
	tempDir := fl.String("temp-dir", "", "the folder of the working index and the join's runs, removed at the end (default: the system's temporary folder)")
	joinMemory := byteSize(textindex.DefaultJoinMemory)
	fl.Var(&joinMemory, "join-memory", "the memory the join's sorts hold (units allowed: 1GiB)")
	progress := fl.String("progress", "auto", "progress on stderr: auto (a line on a terminal), bar, json or none")
	var ff fingerprintFlags
	ff.register(fl)
	if code := parseFlags(fl, args); code >= 0 {
		return code
	}
	switch {
	case !*ds || fl.NArg() == 0:
		return fail(stderr, "dedup", exitUsage, errors.New("give the datasets: --dataset FILE [FILE ...]"))
	case *out == "":
		return fail(stderr, "dedup", exitUsage, errors.New("--out is required: where the records kept go"))
	case *keep != "first" && *keep != "longest":
		return fail(stderr, "dedup", exitUsage, fmt.Errorf("--keep %s: want first or longest", quoteShort(*keep)))
	}
	if _, err := textindex.OptionsAt(engine.Options{}, *similarity); err != nil {
		return fail(stderr, "dedup", exitUsage, fmt.Errorf("--similarity: %w", err))
	}
	mode, err := progressMode(*progress, stderr)
	if err != nil {
		return fail(stderr, "dedup", exitUsage, err)
	}
	ctx, stop := signalContext()
	defer stop()
	d := &deduper{paths: fl.Args(), df: &df, ff: &ff, fl: fl, similarity: *similarity, longest: *keep == "longest",
		tempDir: *tempDir, joinMemory: int(joinMemory), mode: mode, stderr: stderr}
	code, err := d.run(ctx, *db, *out, *clusters)
	if err != nil {
		if ctx.Err() != nil && errors.Is(err, context.Canceled) {
			err = fmt.Errorf("interrupted: %s is not whole; nothing was added to an index; run the same command again", *out)
		}
		return fail(stderr, "dedup", max(code, exitFailed), err)
	}
	return code
}

// deduper is one run of dedup.
type deduper struct {
	paths      []string
	df         *datasetFlags
	ff         *fingerprintFlags
	fl         *flag.FlagSet
	similarity float64
	longest    bool
	tempDir    string
	joinMemory int
	mode       string
	stderr     io.Writer

	// By position (from 1): the union-find parent, and with longest the
	// text's bytes; bits of the records that are documents, grouped ones,
	// and those an index already holds near-duplicates of.
	parent  []uint32
	length  []uint32
	docs    bitset
	grouped bitset
	known   bitset
	code    int
}

type bitset []uint64

func (b *bitset) set(i uint32) {
	for int(i/64) >= len(*b) {
		*b = append(*b, 0)
	}
	(*b)[i/64] |= 1 << (i % 64)
}

func (b bitset) has(i uint32) bool { return int(i/64) < len(b) && b[i/64]&(1<<(i%64)) != 0 }

func (d *deduper) find(i uint32) uint32 {
	for d.parent[i] != i {
		d.parent[i] = d.parent[d.parent[i]]
		i = d.parent[i]
	}
	return i
}

// better reports whether record a should be kept over record b.
func (d *deduper) better(a, b uint32) bool {
	if d.longest && d.length[a] != d.length[b] {
		return d.length[a] > d.length[b]
	}
	return a < b
}

func (d *deduper) union(a, b uint32) {
	a, b = d.find(a), d.find(b)
	if a == b {
		return
	}
	if d.better(b, a) {
		a, b = b, a
	}
	d.parent[b] = a // the root is the record a group keeps
}

func (d *deduper) run(ctx context.Context, dbDir, out, clustersPath string) (int, error) {
	// The index to deduplicate against, if any, says how text is read.
	var target *engine.DB
	sketchSize := 0
	if dbDir != "" {
		var err error
		dbf := dbFlags{dir: dbDir}
		if target, err = dbf.open(engine.Options{}, false); err != nil {
			return exitFailed, err
		}
		defer target.Close()
		if !textindex.Sketched(target) {
			return exitUsage, fmt.Errorf("--db %s: an index without sketches of text: dedup compares texts (make one with add --text or --dataset)", dbDir)
		}
		if err := textindex.CheckSimilarity(target.SketchSize(), d.similarity); err != nil {
			return exitUsage, fmt.Errorf("--similarity: %w", err)
		}
		if err := d.ff.withIndex(ctx, target, target.SketchSize(), d.fl, false); err != nil {
			return usageOr(err), err
		}
		sketchSize = target.SketchSize()
	} else {
		if !flagGiven(d.fl, "shingle") {
			d.ff.shingle = textindex.Shingle
		}
		o, _ := textindex.OptionsAt(engine.Options{}, d.similarity)
		sketchSize = o.SketchSize
	}
	rd, err := d.ff.textReader(sketchSize)
	if err != nil {
		return exitUsage, err
	}
	tmp, err := os.MkdirTemp(d.tempDir, "simhashdb-dedup-")
	if err != nil {
		return exitFailed, err
	}
	defer os.RemoveAll(tmp)

	// 1. Every record a document of a working index, numbered by position.
	work, err := d.load(ctx, rd, filepath.Join(tmp, "index"), sketchSize)
	if err != nil {
		return exitFailed, err
	}
	defer work.Close()
	// 2. Its pairs, grouped.
	if err := d.group(ctx, work, tmp); err != nil {
		return exitFailed, err
	}
	// 3. Against the index given, and into it.
	if target != nil {
		if err := d.against(ctx, work, target); err != nil {
			return exitFailed, err
		}
	}
	// 4. The records kept, in order.
	kept, dropped, err := d.write(ctx, work, target, out, clustersPath)
	if err != nil {
		return exitFailed, err
	}
	fmt.Fprintf(d.stderr, "%s dedup: %d records: %d kept, %d dropped as near-duplicates", programName, len(d.parent)-1, kept, dropped)
	if target != nil {
		fmt.Fprintf(d.stderr, ", %d of them near documents %s holds; the %d kept added to it", d.knownCount(), dbDir, kept)
	}
	fmt.Fprintln(d.stderr)
	return d.code, nil
}

func (d *deduper) knownCount() int {
	n := 0
	for i := range uint32(len(d.parent)) {
		if d.known.has(i) && d.docs.has(i) && d.find(i) == i {
			n++
		}
	}
	return n
}

// load reads the datasets into a new index in dir, each record the
// document of its position; it reports bad records.
func (d *deduper) load(ctx context.Context, rd *textindex.Reader, dir string, sketchSize int) (*engine.DB, error) {
	// A working index read once in order: its defaults sized for 512 MiB
	// (a load sorted on disk past a quarter of it, a small cache), not for
	// the machine, so that the job's memory does not follow the dataset.
	opts, _ := textindex.OptionsAt(engine.Options{Sync: engine.SyncNone, MemoryLimit: 512 << 20}, d.similarity)
	opts.SketchSize = sketchSize // the index's given, whose layout may be another
	db, err := engine.Open(dir, opts)
	if err != nil {
		return nil, err
	}
	dr, err := newDatasetReader(d.paths, d.df.options(), rd, 1)
	if err != nil {
		db.Close()
		return nil, err
	}
	d.parent = []uint32{0}
	if d.longest {
		d.length = []uint32{0}
	}
	p := newDedupProgress(d.mode, d.stderr, "reading", dr.size.Load(), dr.bytesRead)
	defer p.stop()
	docs := func(yield func(engine.Doc, error) bool) {
		for r, err := range dr.Docs(ctx) {
			if err != nil {
				yield(engine.Doc{}, err)
				return
			}
			if uint64(len(d.parent)) > math.MaxUint32 {
				yield(engine.Doc{}, fmt.Errorf("more than %d records: dedup numbers them in 32 bits", uint32(math.MaxUint32)))
				return
			}
			pos := uint32(len(d.parent))
			d.parent = append(d.parent, pos)
			if d.longest {
				d.length = append(d.length, uint32(min(uint64(r.text), math.MaxUint32)))
			}
			p.count(1)
			if r.err != nil {
				fmt.Fprintf(d.stderr, "%s dedup: %v: not written\n", programName, r.err)
				d.code = exitFailed
				continue
			}
			d.docs.set(pos)
			if !yield(engine.Doc{ID: uint64(pos), Fingerprint: r.doc.Fingerprint, Sketch: r.doc.Sketch}, nil) {
				return
			}
		}
	}
	if err := db.Load(ctx, docs); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// group unites the records of every pair.
func (d *deduper) group(ctx context.Context, work *engine.DB, tmp string) error {
	jp := newJoinProgress(d.mode, d.stderr)
	defer jp.stop()
	o := textindex.JoinOptions{TempDir: tmp, Memory: d.joinMemory, Progress: jp.report}
	for p, err := range textindex.PairsWith(ctx, work, work.K(), d.similarity, o) {
		if err != nil {
			return err
		}
		a, b := uint32(p.A.ID), uint32(p.B.ID)
		d.grouped.set(a)
		d.grouped.set(b)
		d.union(a, b)
	}
	return nil
}

// against marks the records kept so far that target holds a near-duplicate
// of.
func (d *deduper) against(ctx context.Context, work, target *engine.DB) error {
	p := newDedupProgress(d.mode, d.stderr, "querying the index", 0, nil)
	defer p.stop()
	for doc, err := range work.Docs(ctx) {
		if err != nil {
			return err
		}
		pos := uint32(doc.ID)
		p.count(1)
		if d.find(pos) != pos {
			continue
		}
		ms, err := target.Query(ctx, doc.Fingerprint, target.K())
		if err != nil {
			return err
		}
		if len(textindex.Verify(ms, doc.Sketch, d.similarity)) > 0 {
			d.known.set(pos)
		}
	}
	return nil
}

// write writes the records kept, and the groups, reading the datasets
// again; the records kept are added to target, if any.
func (d *deduper) write(ctx context.Context, work, target *engine.DB, out, clustersPath string) (kept, dropped int, err error) {
	w, err := newRecordWriter(out, d.paths[0])
	if err != nil {
		return 0, 0, err
	}
	defer w.abort()
	var cw *os.File
	if clustersPath != "" {
		if cw, err = os.Create(clustersPath); err != nil {
			return 0, 0, err
		}
		defer cw.Close()
	}
	var next uint64
	var adds []engine.Doc
	if target != nil {
		if next, err = target.NextID(ctx); err != nil {
			return 0, 0, err
		}
		next = firstNumbered(next)
	}
	p := newDedupProgress(d.mode, d.stderr, "writing", 0, nil)
	defer p.stop()
	var pos uint32
	for _, path := range d.paths {
		f, err := dataset.Open(path)
		if err != nil {
			return 0, 0, unwrapPathError(err)
		}
		for it, err := range f.Items(d.df.options()) {
			if err != nil {
				var re *dataset.RecordError
				if !errors.As(err, &re) {
					f.Close()
					return 0, 0, err
				}
			}
			pos++
			p.count(1)
			if !d.docs.has(pos) {
				continue // reported when read
			}
			root := d.find(pos)
			isKept := root == pos && !d.known.has(pos)
			if cw != nil && d.grouped.has(pos) {
				fmt.Fprintf(cw, "{\"record\":%s,\"group\":%d,\"kept\":%t}\n", recordID(it, pos), root, root == pos)
			}
			if !isKept {
				dropped++
				continue
			}
			kept++
			if err := w.write(it); err != nil {
				f.Close()
				return 0, 0, err
			}
			if target != nil {
				doc, err := work.Get(ctx, uint64(pos))
				if err != nil {
					f.Close()
					return 0, 0, err
				}
				if rec, rerr := it.Record(); rerr == nil {
					doc.Name = rec.Name
					if rec.HasID {
						doc.ID = rec.ID
					} else {
						doc.ID, next = next, next+1
						doc.Name = cmp.Or(rec.Name, rec.Key, rec.Place)
					}
				}
				adds = append(adds, doc)
				if len(adds) == textBatch {
					if err := target.InsertBatch(ctx, adds); err != nil {
						f.Close()
						return 0, 0, err
					}
					adds = adds[:0]
				}
			}
		}
		f.Close()
	}
	if err := w.close(); err != nil {
		return 0, 0, err
	}
	if target != nil && len(adds) > 0 {
		if err := target.InsertBatch(ctx, adds); err != nil {
			return 0, 0, err
		}
	}
	if cw != nil {
		if err := cw.Close(); err != nil {
			return 0, 0, err
		}
	}
	return kept, dropped, nil
}

// recordID is a record's id as the clusters file gives it: its own (a
// number, or a key as a JSON string), else its position.
func recordID(it dataset.Item, pos uint32) string {
	rec, err := it.Record()
	switch {
	case err != nil:
	case rec.HasID:
		return fmt.Sprint(rec.ID)
	case rec.Key != "":
		b, _ := json.Marshal(rec.Key)
		return string(b)
	}
	return fmt.Sprint(pos)
}
