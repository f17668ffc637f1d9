package quality

import (
	"fmt"

	"math/bits"
	"strings"

	"github.com/cespare/xxhash/v2"

	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/sketch"
)

// VerifiedResult scores near-duplicates as the tables propose them and a
// sketch (package sketch, of the page's 5-word shingles) decides: a pair is
// reported when its fingerprints lie within Within and its estimated
// Jaccard is at least Threshold.
type VerifiedResult struct {
	Collection string  `json:"collection"`
	Reader     string  `json:"reader"`
	Within     int     `json:"within"`
	Threshold  float64 `json:"threshold"`
	// Recall of the near pairs (Jaccard >= NearJaccard) and of those whose
	// text changed.
	RecallNear    float64 `json:"recall_near"`
	RecallChanged float64 `json:"recall_changed"`
	// Candidates are the cross pairs within Within (what the sketch
	// checks); False those it passed below UnrelatedJaccard, FalseRate
	// over every cross pair.
	Candidates int     `json:"cross_candidates"`
	False      int     `json:"cross_false"`
	FalseRate  float64 `json:"false_rate"`
	// Unverified is the same reader's false rate within Within without
	// the sketch.
	Unverified float64 `json:"unverified_false_rate"`
}

// EvaluateVerified scores rd's fingerprints as candidates within each of
// within, verified by sketches at threshold.
func (r *Release) EvaluateVerified(rd Reader, within []int, threshold float64) []VerifiedResult {
	var out []VerifiedResult
	for _, d := range within {
		out = append(out, r.EvaluateUnion([]Reader{rd}, d, threshold))
	}
	return out
}

// EvaluateUnion scores candidates that any of rds' fingerprints finds
// within d (an index of one fingerprint each, asked together), verified
// by sketches at threshold.
func (r *Release) EvaluateUnion(rds []Reader, d int, threshold float64) VerifiedResult {
	type fps struct {
		old, new     []uint64
		oldOK, newOK []bool
	}
	var all []fps
	var oldSk, newSk []sketch.Sketch
	var names []string
	for _, rd := range rds {
		var f fps
		f.old, f.oldOK, oldSk = sketched(rd, r.Old)
		f.new, f.newOK, newSk = sketched(rd, r.New)
		all = append(all, f)
		names = append(names, rd.Name)
	}
	near := func(i, j int) bool {
		for _, f := range all {
			if f.oldOK[i] && f.newOK[j] && bits.OnesCount64(f.old[i]^f.new[j]) <= d {
				return true
			}
		}
		return false
	}
	res := VerifiedResult{Collection: r.Name, Reader: strings.Join(names, " or "), Within: d, Threshold: threshold}
	r.scoreCandidates(&res, near, oldSk, newSk)
	return res
}

// UnionReaders are single-word v3 fingerprints of three feature hashes
// (xxHash, FNV-1, xxHash of the token and a salt byte): independent
// hyperplanes over the same features, whose union EvaluateUnion scores as
// a text index's candidates at a small k.
func UnionReaders() ([]Reader, error) {
	salted := func(tok []byte) uint64 {
		return xxhash.Sum64(append(append(make([]byte, 0, len(tok)+1), tok...), 0x9e))
	}
	var rs []Reader
	for _, h := range []struct {
		name string
		hash simhash.Hash
	}{{"xxhash", nil}, {"fnv1", simhash.FNV1}, {"xxhash salted", salted}} {
		f, err := simhash.New(simhash.Options{Pipeline: simhash.PipelineV3, Shingle: 1, Hash: h.hash})
		if err != nil {
			return nil, err
		}
		rs = append(rs, Reader{"w=1 " + h.name, document(f)})
	}
	return rs, nil
}

// VerifiedTable is the results as a Markdown table.
func VerifiedTable(rs []VerifiedResult) string {
	var b strings.Builder
	b.WriteString("| collection | reader | candidates within | recall near | recall changed | cross candidates | false (verified) | false rate | false rate unverified |\n|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range rs {
		fmt.Fprintf(&b, "| %s | %s | %d | %.3f | %.3f | %d | %d | %.1e | %.1e |\n", r.Collection, r.Reader, r.Within, r.RecallNear, r.RecallChanged, r.Candidates, r.False, r.FalseRate, r.Unverified)
	}
	return b.String()
}

// VerifiedReaders are the candidate fingerprints the verified evaluation
// tries: the default (v3, 2-word shingles) and single words, the reader of
// most recall that FeatureReaders found.
func VerifiedReaders() ([]Reader, error) {
	var rs []Reader
	for _, w := range []int{2, 1} {
		f, err := simhash.New(simhash.Options{Pipeline: simhash.PipelineV3, Shingle: w})
		if err != nil {
			return nil, err
		}
		rs = append(rs, Reader{fmt.Sprintf("v3 w=%d", w), document(f)})
	}
	return rs, nil
}

// EvaluateProbed scores candidates as the tables of design d find them
// when asked for a distance beyond the one d covers: a pair is a candidate
// when its fingerprints lie within within and share the prefix of at least
// one of d's tables (what a probe of each table reads), verified by
// sketches at threshold. Within d.K every pair within is found; beyond, a
// pair whose differing bits fall in every table's prefix is missed.
func (r *Release) EvaluateProbed(rd Reader, d *permutation.Design, within int, threshold float64) VerifiedResult {
	oldFP, oldOK, oldSk := sketched(rd, r.Old)
	newFP, newOK, newSk := sketched(rd, r.New)
	probed := func(a, b uint64) bool {
		if bits.OnesCount64(a^b) > within {
			return false
		}
		for i := range d.Tables {
			t := &d.Tables[i]
			if (t.Permute(a)^t.Permute(b))>>(64-t.Prefix) == 0 {
				return true
			}
		}
		return false
	}
	res := VerifiedResult{Collection: r.Name, Reader: fmt.Sprintf("%s, %d tables exact within %d, p >= %d", rd.Name, len(d.Tables), d.ExactWithin(), d.MinPrefix()), Within: within, Threshold: threshold}
	res.RecallNear, res.RecallChanged = r.recall(func(p ReleasePair) bool {
		return oldOK[p.Old] && newOK[p.New] && probed(oldFP[p.Old], newFP[p.New]) &&
			sketch.Similarity(oldSk[p.Old], newSk[p.New]) >= threshold
	})
	return res
}

// sketched returns each page's fingerprint by rd (ok false where rd
// reads none) and the sketch of its ground-truth shingles.
func sketched(rd Reader, pages []Page) ([]uint64, []bool, []sketch.Sketch) {
	fp, ok, sk := make([]uint64, len(pages)), make([]bool, len(pages)), make([]sketch.Sketch, len(pages))
	parallel(len(pages), func(i int) {
		fp[i], ok[i] = rd.Fp(pages[i].Raw)
		sk[i] = sketch.Of(pages[i].Shingles)
	})
	return fp, ok, sk
}

// scoreCandidates fills res's recall and cross-pair counts for the pairs
// candidate proposes (old page i, new page j), verified by the pages'
// sketches at res.Threshold.
func (r *Release) scoreCandidates(res *VerifiedResult, candidate func(i, j int) bool, oldSk, newSk []sketch.Sketch) {
	res.RecallNear, res.RecallChanged = r.recall(func(p ReleasePair) bool {
		return candidate(p.Old, p.New) && sketch.Similarity(oldSk[p.Old], newSk[p.New]) >= res.Threshold
	})
	paired := map[[2]int]bool{}
	for _, p := range r.Pairs {
		paired[[2]int{p.Old, p.New}] = true
	}
	type row struct{ cand, unrel, fls int }
	rows := make([]row, len(r.Old))
	parallel(len(r.Old), func(i int) {
		for j := range r.New {
			if paired[[2]int{i, j}] || !candidate(i, j) {
				continue
			}
			rows[i].cand++
			if r.jaccard(i, j) >= UnrelatedJaccard {
				continue
			}
			rows[i].unrel++
			if sketch.Similarity(oldSk[i], newSk[j]) >= res.Threshold {
				rows[i].fls++
			}
		}
	})
	unrel := 0
	for _, rw := range rows {
		res.Candidates += rw.cand
		res.False += rw.fls
		unrel += rw.unrel
	}
	cross := max(len(r.Old)*len(r.New)-len(r.Pairs), 1)
	res.FalseRate = float64(res.False) / float64(cross)
	res.Unverified = float64(unrel) / float64(cross)
}
