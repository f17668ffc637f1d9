package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/sketch"
	"github.com/simhashdb/simhashdb/textindex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// family is a record of a generated dataset.
type familyRecord struct {
	ID   uint64 `json:"id" parquet:"id"`
	Text string `json:"text" parquet:"text"`
	URL  string `json:"url" parquet:"url"`
}

// families returns n families of records with a fixed seed: an original
// of 150 to 400 words, and 0 to 2 copies with a word in 30 to 60 changed
// (near-duplicates), or a word in 4 changed (not), shuffled.
func families(n int, seed uint64) []familyRecord {
	r := rand.New(rand.NewPCG(seed, 3))
	word := func() string { return fmt.Sprintf("w%dq", r.IntN(20000)) }
	var out []familyRecord
	for f := range n {
		orig := make([]string, 150+r.IntN(250))
		for i := range orig {
			orig[i] = word()
		}
		out = append(out, familyRecord{Text: strings.Join(orig, " "), URL: fmt.Sprintf("https://f%d.example/", f)})
		for c := range r.IntN(3) {
			every := []int{30 + r.IntN(30), 4}[r.IntN(2)]
			ed := slices.Clone(orig)
			for i := r.IntN(every); i < len(ed); i += every {
				ed[i] = word()
			}
			out = append(out, familyRecord{Text: strings.Join(ed, " "), URL: fmt.Sprintf("https://f%d.example/%d", f, c)})
		}
	}
	r.Shuffle(len(out), func(i, j int) { out[i], out[j] = out[j], out[i] })
	for i := range out {
		out[i].ID = uint64(1000 + i)
	}
	return out
}

func jsonLinesOf(t *testing.T, recs []familyRecord) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	for _, r := range recs {
		require.NoError(t, enc.Encode(r))
	}
	return b.Bytes()
}

// writeDatasets writes recs as plain, gzip and zstd JSON lines and as
// Parquet, and returns their paths.
func writeDatasets(t *testing.T, recs []familyRecord) (plain, gz, zst, pq string) {
	dir := t.TempDir()
	data := jsonLinesOf(t, recs)
	plain = filepath.Join(dir, "data.jsonl")
	require.NoError(t, os.WriteFile(plain, data, 0o644))
	var b bytes.Buffer
	zw := gzip.NewWriter(&b)
	_, err := zw.Write(data)
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	gz = filepath.Join(dir, "data.jsonl.gz")
	require.NoError(t, os.WriteFile(gz, b.Bytes(), 0o644))
	enc, err := zstd.NewWriter(nil)
	require.NoError(t, err)
	zst = filepath.Join(dir, "data.jsonl.zst")
	require.NoError(t, os.WriteFile(zst, enc.EncodeAll(data, nil), 0o644))
	pq = filepath.Join(dir, "data.parquet")
	f, err := os.Create(pq)
	require.NoError(t, err)
	w := parquet.NewGenericWriter[familyRecord](f, parquet.MaxRowsPerRowGroup(7))
	_, err = w.Write(recs)
	require.NoError(t, err)
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())
	return plain, gz, zst, pq
}

// TestAddDataset: the records of a dataset are stored as documents under
// their ids and names, the same from plain, gzip, zstd and Parquet files;
// bad records are named by file and line and the rest go in (exit 1);
// records without an id are numbered after the largest; progress is
// printed; the index keeps band keys for --min-similarity, and stats says
// so.
func TestAddDataset(t *testing.T) {
	recs := families(20, 1)
	plain, gz, zst, pq := writeDatasets(t, recs)
	var exports []string
	for _, path := range []string{plain, gz, zst, pq} {
		db := filepath.Join(t.TempDir(), "idx")
		r := runCLI(t, "", "add", "--db", db, "--dataset", path, "--name-field", "url", "--progress", "json")
		require.Equal(t, 0, r.code, "%s: %s", path, r.stderr)
		assert.Contains(t, r.stderr, fmt.Sprintf("%d records: %d stored", len(recs), len(recs)))
		assert.Contains(t, r.stderr, `"durable":`, "progress as JSON lines")
		assert.Len(t, strings.Split(strings.TrimSpace(r.stdout), "\n"), len(recs), "a line a document")
		g := runCLI(t, "", "get", "--db", db, "--json", fmt.Sprint(recs[3].ID))
		require.Equal(t, 0, g.code, g.stderr)
		assert.Contains(t, g.stdout, recs[3].URL)
		e := runCLI(t, "", "export", "--db", db)
		require.Equal(t, 0, e.code, e.stderr)
		exports = append(exports, e.stdout)
	}
	for i := range exports[1:] {
		assert.Equal(t, exports[0], exports[i+1], "the same documents from every format")
	}

	// Bad records, records without ids, and keys.
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(`{"id": 5, "text": "a text of a few words to keep"}
{"id": 6, "body": "no text"}
not json at all
{"text": "a record without an id of its own"}
{"id": "doc-x", "text": "a record whose id is a key"}
{"id": 7, "text": "   "}
`), 0o644))
	db := filepath.Join(t.TempDir(), "idx")
	r := runCLI(t, "", "add", "--db", db, "--dataset", bad)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, bad+`:2: dataset: bad field: no field "text"`)
	assert.Contains(t, r.stderr, bad+":3: not a JSON object")
	assert.Contains(t, r.stderr, bad+":6: no words to fingerprint: not stored")
	assert.Contains(t, r.stderr, "6 records: 3 stored; 2 bad records skipped; 1 records without words skipped")
	// Numbered from 2^53 by position: the fourth and fifth records.
	fourth, fifth := fmt.Sprint(uint64(numberedFrom+3)), fmt.Sprint(uint64(numberedFrom+4))
	g := runCLI(t, "", "get", "--db", db, "--json", "5", "6", "7", fourth, fifth)
	assert.Contains(t, g.stdout, `{"id":5,`)
	assert.Contains(t, g.stdout, `{"id":`+fourth+`,"name":"`+bad+`:4"`, "named by its place")
	assert.Contains(t, g.stdout, `{"id":`+fifth+`,"name":"doc-x"`, "named by its key")
	assert.NotContains(t, g.stdout, `"id":6`)
	// Again: records with ids are replaced, the others numbered after the
	// largest.
	r = runCLI(t, "", "add", "--db", db, "--dataset", bad)
	assert.Equal(t, 1, r.code, r.stderr)
	g = runCLI(t, "", "get", "--db", db, "--json", fmt.Sprint(uint64(numberedFrom+5+3)))
	assert.Equal(t, 0, g.code, g.stderr)
	assert.Contains(t, g.stdout, bad+":4")

	// Refused: both --text and --dataset, a dataset that is a folder, a
	// similarity no layout has.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "--db", db, "--dataset", "--text", bad}, "give one"},
		{[]string{"add", "--db", filepath.Join(dir, "new"), "--dataset", dir}, "not a regular file"},
		{[]string{"add", "--db", filepath.Join(dir, "new2"), "--dataset", "--min-similarity", "0.3", bad}, "bands find candidates from 0.5 to 1"},
		{[]string{"add", "--db", filepath.Join(dir, "new3"), "--min-similarity", "0.6"}, "goes with --text or --dataset"},
	} {
		r := runCLI(t, "", c.args...)
		assert.NotEqual(t, 0, r.code, "%v", c.args)
		assert.Contains(t, r.stderr, c.want, "%v", c.args)
	}

	// --min-similarity: kept at creation, shown, and asking below refused.
	low := filepath.Join(t.TempDir(), "low")
	r = runCLI(t, "", "add", "--db", low, "--dataset", "--min-similarity", "0.5", plain)
	require.Equal(t, 0, r.code, r.stderr)
	s := runCLI(t, "", "stats", "--db", low)
	layout, err := sketch.LayoutFor(0.5)
	require.NoError(t, err)
	assert.Contains(t, s.stdout, fmt.Sprintf("sketches           %d bytes a document", layout.RecordSize()))
	assert.Contains(t, s.stdout, "min similarity     0.5:")
	r = runCLI(t, "", "find-all", "--db", low, "--similarity", "0.5")
	assert.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "find-all", "--db", db, "--similarity", "0.5")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "make it again with add --min-similarity 0.5")
}

// TestAddDatasetServed: into a served index, records with ids are stored
// as --db stores them; one without an id is refused by its place.
func TestAddDatasetServed(t *testing.T) {
	recs := families(8, 2)
	plain, _, _, _ := writeDatasets(t, recs)
	s := startServe(t, "--db", filepath.Join(t.TempDir(), "served"), "--sketches")
	r := runCLI(t, "", "add", "--server", s.url, "--dataset", plain, "--name-field", "url")
	require.Equal(t, 0, r.code, r.stderr)
	local := filepath.Join(t.TempDir(), "local")
	l := runCLI(t, "", "add", "--db", local, "--dataset", plain, "--name-field", "url")
	require.Equal(t, 0, l.code, l.stderr)
	assert.Equal(t, l.stdout, r.stdout)
	se := runCLI(t, "", "export", "--server", s.url)
	le := runCLI(t, "", "export", "--db", local)
	assert.Equal(t, le.stdout, se.stdout)

	noID := filepath.Join(t.TempDir(), "noid.jsonl")
	require.NoError(t, os.WriteFile(noID, []byte(`{"text": "a record without an id of its own, into a served index"}`+"\n"), 0o644))
	r = runCLI(t, "", "add", "--server", s.url, "--dataset", noID)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, noID+":1: no integer id")
}

// dedupOracle is what dedup keeps of recs (positions from 1), computed
// here: every pair that shares a band key and whose sketches reach
// similarity, grouped into connected components, each keeping its first
// record (or its longest text).
func dedupOracle(t *testing.T, recs []familyRecord, similarity float64, longest bool) (kept []int, group map[int]int) {
	o, err := textindex.OptionsAt(engine.Options{}, similarity)
	require.NoError(t, err)
	f, err := textindex.NewSchema().Fingerprinter()
	require.NoError(t, err)
	rd, err := textindex.NewReader(f, simhash.ReadAuto, o.SketchSize)
	require.NoError(t, err)
	l, _ := sketch.LayoutOfSize(o.SketchSize)
	sks := make([]string, len(recs))
	for i, r := range recs {
		_, sk, err := rd.Read(strings.NewReader(r.Text))
		require.NoError(t, err)
		sks[i] = sk
	}
	parent := make([]int, len(recs))
	for i := range parent {
		parent[i] = i
	}
	var find func(int) int
	find = func(i int) int {
		if parent[i] != i {
			parent[i] = find(parent[i])
		}
		return parent[i]
	}
	paired := map[int]bool{}
	for i := range recs {
		for j := i + 1; j < len(recs); j++ {
			shared := false
			for b := range l.Bands {
				shared = shared || sketch.BandKey([]byte(sks[i]), b) == sketch.BandKey([]byte(sks[j]), b)
			}
			if s, _ := textindex.Similarity(sks[i], sks[j]); shared && s >= similarity {
				paired[i], paired[j] = true, true
				parent[find(j)] = find(i)
			}
		}
	}
	best := map[int]int{}
	for i := range recs {
		root := find(i)
		b, ok := best[root]
		if !ok || longest && len(recs[i].Text) > len(recs[b].Text) {
			best[root] = i
		}
	}
	group = map[int]int{}
	for i := range recs {
		k := best[find(i)]
		if k == i {
			kept = append(kept, i)
		}
		if paired[i] {
			group[i+1] = k + 1
		}
	}
	return kept, group
}

// TestDedup: dedup writes exactly the records the oracle keeps, as they
// were (JSON lines, compressed as asked; Parquet from Parquet), in order,
// with --keep first or longest, and the groups the oracle forms; with
// --db it drops the records an index already holds near-duplicates of and
// adds the rest to it.
func TestDedup(t *testing.T) {
	recs := families(40, 3)
	plain, _, zst, pq := writeDatasets(t, recs)
	lines := strings.Split(strings.TrimSpace(string(jsonLinesOf(t, recs))), "\n")
	for _, keep := range []string{"first", "longest"} {
		kept, group := dedupOracle(t, recs, textindex.DefaultSimilarity, keep == "longest")
		require.Less(t, len(kept), len(recs)-10, "the families hold near-duplicates")
		var want []string
		for _, i := range kept {
			want = append(want, lines[i])
		}
		for _, in := range []string{plain, zst} {
			dir := t.TempDir()
			out, clusters := filepath.Join(dir, "kept.jsonl.gz"), filepath.Join(dir, "groups.jsonl")
			r := runCLI(t, "", "dedup", "--dataset", in, "--out", out, "--clusters", clusters, "--keep", keep, "--progress", "json")
			require.Equal(t, 0, r.code, r.stderr)
			assert.Contains(t, r.stderr, fmt.Sprintf("%d records: %d kept, %d dropped", len(recs), len(kept), len(recs)-len(kept)))
			assert.Contains(t, r.stderr, `"stage":"reading"`, "progress")
			f, err := os.Open(out)
			require.NoError(t, err)
			zr, err := gzip.NewReader(f)
			require.NoError(t, err, "--out ending .gz is gzip")
			var got bytes.Buffer
			_, err = got.ReadFrom(zr)
			require.NoError(t, err)
			f.Close()
			assert.Equal(t, want, strings.Split(strings.TrimSpace(got.String()), "\n"), "keep %s, %s", keep, in)
			b, err := os.ReadFile(clusters)
			require.NoError(t, err)
			gotGroups := map[int]int{}
			for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
				var g struct {
					Record uint64
					Group  int
					Kept   bool
				}
				require.NoError(t, json.Unmarshal([]byte(l), &g))
				pos := int(g.Record-1000) + 1 // the records' own ids are 1000 + position - 1
				gotGroups[pos] = g.Group
				assert.Equal(t, pos == g.Group, g.Kept)
			}
			assert.Equal(t, group, gotGroups, "keep %s", keep)
		}
	}

	// Parquet in, Parquet out: the rows kept.
	kept, _ := dedupOracle(t, recs, textindex.DefaultSimilarity, false)
	out := filepath.Join(t.TempDir(), "kept.parquet")
	r := runCLI(t, "", "dedup", "--dataset", pq, "--out", out)
	require.Equal(t, 0, r.code, r.stderr)
	rows, err := parquet.ReadFile[familyRecord](out)
	require.NoError(t, err)
	var want []familyRecord
	for _, i := range kept {
		want = append(want, recs[i])
	}
	assert.Equal(t, want, rows)

	// Against an index: the first half added, then the whole deduplicated
	// against it: only what is near nothing stored is kept, and added.
	db := filepath.Join(t.TempDir(), "idx")
	half := filepath.Join(t.TempDir(), "half.jsonl")
	require.NoError(t, os.WriteFile(half, []byte(strings.Join(lines[:len(lines)/2], "\n")+"\n"), 0o644))
	r = runCLI(t, "", "add", "--db", db, "--dataset", half)
	require.Equal(t, 0, r.code, r.stderr)
	out = filepath.Join(t.TempDir(), "new.jsonl")
	r = runCLI(t, "", "dedup", "--db", db, "--dataset", plain, "--out", out)
	require.Equal(t, 0, r.code, r.stderr)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		assert.NotContains(t, lines[:len(lines)/2], l, "a record the index holds is dropped")
	}
	r = runCLI(t, "", "dedup", "--db", db, "--dataset", plain, "--out", out)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, fmt.Sprintf("%d records: 0 kept", len(recs)), "a second run: all of it is in the index now")

	// Bad records are named and not written; refusals.
	bad := filepath.Join(t.TempDir(), "bad.jsonl")
	require.NoError(t, os.WriteFile(bad, []byte(lines[0]+"\n{\"id\": 1}\n"+lines[0]+"\n"), 0o644))
	out = filepath.Join(t.TempDir(), "out.jsonl")
	r = runCLI(t, "", "dedup", "--dataset", bad, "--out", out)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, bad+`:2: dataset: bad field: no field "text": not written`)
	b, err = os.ReadFile(out)
	require.NoError(t, err)
	assert.Equal(t, lines[0]+"\n", string(b), "the first of two copies")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"dedup", "--dataset", bad}, "--out is required"},
		{[]string{"dedup", "--out", out, bad}, "--dataset FILE"},
		{[]string{"dedup", "--dataset", "--out", out, "--keep", "last", bad}, "want first or longest"},
		{[]string{"dedup", "--dataset", "--out", out, "--similarity", "0.2", bad}, "from 0.5 to 1"},
		{[]string{"dedup", "--dataset", "--out", out, "--db", db, "--similarity", "0.6", bad}, "below the index's lowest"},
	} {
		r := runCLI(t, "", c.args...)
		assert.Equal(t, 2, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.want, "%v", c.args)
	}
}
