package quality

import (
	"bytes"
	"context"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/textindex"
)

// IndexResult scores the near-duplicates a real index reports over both
// releases of a collection, as a user meets them (add --text, then
// find-all --db): every page of both releases stored, then every pair the
// index answers, its cross-release pairs judged against the ground truth.
type IndexResult struct {
	Collection string `json:"collection"`
	Index      string `json:"index"`
	// Recall of the near pairs (Jaccard >= NearJaccard) and of those whose
	// text changed.
	RecallNear    float64 `json:"recall_near"`
	RecallChanged float64 `json:"recall_changed"`
	// False counts the cross-release pairs reported below
	// UnrelatedJaccard; FalseRate is over every cross pair.
	False     int     `json:"cross_false"`
	FalseRate float64 `json:"false_rate"`
	// BytesPerDoc is the index's bytes on disk a document after a flush.
	BytesPerDoc float64 `json:"bytes_per_doc"`
	// FindAllCPU is the process CPU time of the all-pairs run (the median of
	// findAllRuns).
	FindAllCPU time.Duration `json:"find_all_cpu_ns"`
	Pairs      int           `json:"pairs"`
}

// IndexKinds are the indexes EvaluateIndex builds: a text index (package
// textindex: single-word fingerprints within K, verified by sketches) and
// the fingerprint-only index of pipeline v3 at k = 3.
var IndexKinds = []string{"text index", "v3 k=3"}

// indexed is what an index of kind (one of IndexKinds) reports of
// documents raw (document i is id i+1): every pair, by ids, with its bytes
// a document on disk and the CPU of the all-pairs run.
type indexed struct {
	pairs       map[[2]int]bool // document indexes, smaller first
	n           int
	bytesPerDoc float64
	cpu         time.Duration
}

func indexPairs(ctx context.Context, dir, kind string, raw [][]byte, names []string) (indexed, error) {
	var out indexed
	var opts engine.Options
	var so simhash.Options
	sketched := kind == IndexKinds[0]
	// The default size hint, as add --text and add make them: the tables
	// are those a user's index gets, not a design for a few hundred pages.
	if sketched {
		opts, so = textindex.Options(engine.Options{}), simhash.Options{Pipeline: simhash.PipelineV3, Shingle: textindex.Shingle}
	} else {
		opts, so = engine.Options{K: 3}, simhash.Options{Pipeline: simhash.PipelineV3}
	}
	opts.Sync = engine.SyncNone
	f, err := simhash.New(so)
	if err != nil {
		return out, err
	}
	db, err := engine.Open(dir, opts)
	if err != nil {
		return out, err
	}
	rd, err := textindex.NewReader(f, simhash.ReadAuto, db.SketchSize())
	if err != nil {
		return out, err
	}
	defer db.Close()
	var docs []engine.Doc
	for i, b := range raw {
		fp, sk, err := rd.Read(bytes.NewReader(b))
		if err != nil {
			continue // binary or no words: add --text skips it too
		}
		docs = append(docs, engine.Doc{ID: uint64(i + 1), Fingerprint: fp, Sketch: sk, Name: names[i]})
	}
	if err := db.InsertBatch(ctx, docs); err != nil {
		return out, err
	}
	if err := db.Flush(ctx); err != nil {
		return out, err
	}
	st, err := db.Stats(ctx)
	if err != nil {
		return out, err
	}
	out.bytesPerDoc = float64(st.BytesOnDisk) / float64(max(st.Documents, 1))
	out.pairs = map[[2]int]bool{}
	note := func(a, b uint64) {
		out.pairs[[2]int{int(min(a, b)) - 1, int(max(a, b)) - 1}] = true
		out.n++
	}
	// The median of a few runs, each after a collection: one run of a few
	// milliseconds is noise, and a collection that a run sets off would
	// charge it for marking the bench's whole heap (every collection's
	// text), which a user's find-all does not hold.
	var cpus []time.Duration
	for run := range findAllRuns {
		runtime.GC()
		before := cpuTime()
		if sketched {
			for p, err := range textindex.Pairs(ctx, db, db.K(), textindex.DefaultSimilarity) {
				if err != nil {
					return out, err
				}
				if run == 0 {
					note(p.A.ID, p.B.ID)
				}
			}
		} else {
			for p, err := range db.FindAll(ctx, 3) {
				if err != nil {
					return out, err
				}
				if run == 0 {
					note(p.A.ID, p.B.ID)
				}
			}
		}
		cpus = append(cpus, cpuTime()-before)
	}
	slices.Sort(cpus)
	out.cpu = cpus[len(cpus)/2]
	return out, nil
}

// findAllRuns is how many times indexPairs runs all pairs.
const findAllRuns = 5

// EvaluateIndex builds an index of kind (one of IndexKinds) in dir from
// both releases' files and scores what it reports.
func (r *Release) EvaluateIndex(ctx context.Context, dir, kind string) (IndexResult, error) {
	res := IndexResult{Collection: r.Name, Index: kind}
	var raw [][]byte
	var names []string
	for _, rel := range []struct {
		name  string
		pages []Page
	}{{"old", r.Old}, {"new", r.New}} {
		for _, p := range rel.pages {
			raw, names = append(raw, p.Raw), append(names, "/data/"+r.Name+"/"+rel.name+"/"+p.Path)
		}
	}
	ix, err := indexPairs(ctx, dir, kind, raw, names)
	if err != nil {
		return res, err
	}
	res.BytesPerDoc, res.FindAllCPU, res.Pairs = ix.bytesPerDoc, ix.cpu, ix.n
	// Old page i is document i, new page j document len(Old)+j.
	reported := map[[2]int]bool{}
	for p := range ix.pairs {
		if i, j := p[0], p[1]-len(r.Old); i < len(r.Old) && j >= 0 {
			reported[[2]int{i, j}] = true
		}
	}
	res.RecallNear, res.RecallChanged = r.recall(func(p ReleasePair) bool { return reported[[2]int{p.Old, p.New}] })
	paired := map[[2]int]bool{}
	for _, p := range r.Pairs {
		paired[[2]int{p.Old, p.New}] = true
	}
	for ij := range reported {
		if !paired[ij] && r.jaccard(ij[0], ij[1]) < UnrelatedJaccard {
			res.False++
		}
	}
	res.FalseRate = float64(res.False) / float64(max(len(r.Old)*len(r.New)-len(r.Pairs), 1))
	return res, nil
}

// EvaluateIndex builds an index of kind (one of IndexKinds) in dir from
// the set's documents, originals and edits, and scores what it reports on
// the set's pairs: RecallNear over the near ones (RecallChanged the same:
// every edit changes the text), False over the unrelated ones.
func (s *Set) EvaluateIndex(ctx context.Context, dir, kind string) (IndexResult, error) {
	res := IndexResult{Collection: "licenses and their edits", Index: kind}
	raw, names := make([][]byte, len(s.Docs)), make([]string, len(s.Docs))
	for i, d := range s.Docs {
		raw[i], names[i] = []byte(d.Text), d.Name
	}
	ix, err := indexPairs(ctx, dir, kind, raw, names)
	if err != nil {
		return res, err
	}
	res.BytesPerDoc, res.FindAllCPU, res.Pairs = ix.bytesPerDoc, ix.cpu, ix.n
	near, nearHit, unrelated := 0, 0, 0
	for _, p := range s.Pairs {
		hit := ix.pairs[[2]int{min(p.A, p.B), max(p.A, p.B)}]
		switch {
		case p.Jaccard >= NearJaccard:
			near++
			nearHit += b2i(hit)
		case p.Jaccard < UnrelatedJaccard:
			unrelated++
			res.False += b2i(hit)
		}
	}
	res.RecallNear = ratio(nearHit, near)
	res.RecallChanged = res.RecallNear
	res.FalseRate = float64(res.False) / float64(max(unrelated, 1))
	return res, nil
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// IndexTable is the results as a Markdown table.
func IndexTable(rs []IndexResult) string {
	var b strings.Builder
	b.WriteString("| collection | index | recall near | recall changed | false cross pairs | false rate | bytes a document | find-all CPU | pairs |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %s | %.3f | %.3f | %d | %.1e | %.0f | %v | %d |\n", r.Collection, r.Index, r.RecallNear, r.RecallChanged, r.False, r.FalseRate, r.BytesPerDoc, r.FindAllCPU.Round(100*time.Microsecond), r.Pairs)
	}
	return b.String()
}
