package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/lines"
	"github.com/simhashdb/simhashdb/textindex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// textFolder writes, with a fixed seed, a page, a copy with one word in
// 200 changed (a near-duplicate), one with every fifth word changed (not
// one), and an unrelated page.
func textFolder(t *testing.T) string {
	r := rand.New(rand.NewPCG(8, 9))
	word := func() string { return fmt.Sprintf("w%d", r.IntN(2000)) }
	page := make([]string, 1000)
	for i := range page {
		page[i] = word()
	}
	edit := func(every int) string {
		ed := append([]string(nil), page...)
		for i := every / 2; i < len(ed); i += every {
			ed[i] = word()
		}
		return strings.Join(ed, " ")
	}
	other := make([]string, 1000)
	for i := range other {
		other[i] = word()
	}
	dir := filepath.Join(t.TempDir(), "pages")
	require.NoError(t, os.Mkdir(dir, 0o755))
	for name, text := range map[string]string{"a.txt": strings.Join(page, " "), "near.txt": edit(200), "far.txt": edit(5), "other.txt": strings.Join(other, " ")} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644))
	}
	return dir
}

// recordSize is the bytes of a new text index's records: sketch and band keys.
var recordSize = textindex.Options(engine.Options{}).SketchSize

// TestVerifiedText: add --text makes an index with sketches; query,
// find-all and find-clusters report near-duplicates verified by their
// text's similarity, --similarity moves the line; export | add keeps the
// sketches; records without one are refused with what to do instead.
func TestVerifiedText(t *testing.T) {
	pages := textFolder(t)
	db := filepath.Join(t.TempDir(), "idx")
	r := runCLI(t, "", "add", "--db", db, "--text", pages)
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "stats", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, fmt.Sprintf("sketches           %d bytes a document", recordSize))
	assert.Contains(t, r.stdout, "min similarity     0.7:")
	assert.Contains(t, r.stdout, "answering distances up to 6")
	assert.Contains(t, r.stdout, "--shingle 1")

	name := func(f string) string { return filepath.Join(pages, f) }
	// fingerprint --db prints what the index stores.
	fp := runCLI(t, "", "fingerprint", "--db", db, name("a.txt"))
	require.Equal(t, 0, fp.code, fp.stderr)
	q := runCLI(t, "", "query", "--db", db, "--file", name("a.txt"), "--json")
	assert.Contains(t, q.stdout, `"query":"`+strings.Fields(fp.stdout)[0]+`"`)
	r = runCLI(t, "", "query", "--db", db, "--file", name("a.txt"), "--json")
	require.Equal(t, 0, r.code, r.stderr)
	var ans struct {
		Matches []struct {
			Name       string
			Similarity *float64
		}
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &ans))
	var got []string
	for _, m := range ans.Matches {
		require.NotNil(t, m.Similarity, r.stdout)
		got = append(got, filepath.Base(m.Name))
	}
	assert.Equal(t, []string{"a.txt", "near.txt"}, got, "itself, then its near-duplicate; not the far copy")
	r = runCLI(t, "", "query", "--db", db, "--file", name("a.txt"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "2 near-duplicates (candidates within distance 6, verified by their text's similarity)")
	assert.Contains(t, r.stdout, "SIMILARITY")

	r = runCLI(t, "", "find-all", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, lines, 1, r.stdout)
	var p api.Pair
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &p))
	assert.ElementsMatch(t, []string{"a.txt", "near.txt"}, []string{filepath.Base(p.A.Name), filepath.Base(p.B.Name)})
	require.NotNil(t, p.Similarity)
	assert.Greater(t, *p.Similarity, 0.8)
	assert.Len(t, p.A.Sketch, 2*recordSize, "documents carry their sketch in hex")
	// --similarity 0: every candidate within the distance, with its
	// estimate; the far copy's is low.
	r = runCLI(t, "", "find-all", "--db", db, "--similarity", "0")
	require.Equal(t, 0, r.code, r.stderr)
	assert.GreaterOrEqual(t, strings.Count(r.stdout, "\n"), 1)
	r = runCLI(t, "", "find-clusters", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 1, strings.Count(r.stdout, "\n"), r.stdout)
	assert.Contains(t, r.stdout, `"size":2`)
	r = runCLI(t, "", "find-clusters", "--db", db, "--method", "star")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"size":2`)

	// The near copy is kept out by --if-new; the far one is not.
	db2 := filepath.Join(t.TempDir(), "idx2")
	r = runCLI(t, "", "add", "--db", db2, "--text", name("a.txt"))
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "add", "--db", db2, "--if-new", "6", "--text", name("near.txt"), name("far.txt"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "near.txt: not added: within 6 of document")
	assert.Contains(t, r.stderr, ", similarity ")
	assert.Contains(t, r.stdout, "far.txt")

	// export | add: the same index, sketches and all.
	exp := runCLI(t, "", "export", "--db", db)
	require.Equal(t, 0, exp.code, exp.stderr)
	assert.Contains(t, exp.stdout, fmt.Sprintf(`"sketch":%d`, recordSize))
	copyDB := filepath.Join(t.TempDir(), "copy")
	r = runCLI(t, exp.stdout, "add", "--db", copyDB)
	require.Equal(t, 0, r.code, r.stderr)
	again := runCLI(t, "", "export", "--db", copyDB)
	assert.Equal(t, exp.stdout, again.stdout)
	fa := runCLI(t, "", "find-all", "--db", copyDB)
	assert.Equal(t, strings.TrimSpace(lines[0]), strings.TrimSpace(fa.stdout))

	// batch of the export: each document's near-duplicates, verified;
	// a bare fingerprint by distance.
	r = runCLI(t, exp.stdout+"0x0000000000000001\n", "batch", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	answers := strings.Split(strings.TrimSpace(r.stdout), "\n")
	require.Len(t, answers, 5, r.stdout)
	verified := 0
	for _, a := range answers[:4] {
		var ans struct{ Matches []map[string]any }
		require.NoError(t, json.Unmarshal([]byte(a), &ans))
		for _, m := range ans.Matches {
			assert.Contains(t, m, "similarity", a)
			assert.GreaterOrEqual(t, m["similarity"], 0.7, a)
			verified++
		}
	}
	assert.Equal(t, 6, verified, "itself each of the four, a.txt and near.txt each other's")
	assert.NotContains(t, answers[4], "similarity")

	// Records without a sketch, and 'simhashdb fingerprint' lines: refused.
	r = runCLI(t, "99 0x1 name\n", "add", "--db", db)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "<stdin>:1: sketch")
	assert.Contains(t, r.stderr, "add files with add --text")
	r = runCLI(t, "0x0000000000000001\t/a/b\n", "add", "--db", db)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "carries no sketch")

	// An index whose sketches are of another kind is refused, not
	// compared with this build's.
	odd := filepath.Join(t.TempDir(), "odd")
	require.NoError(t, os.CopyFS(odd, os.DirFS(db)))
	ctx := context.Background()
	e, err := engine.Open(odd, engine.Options{})
	require.NoError(t, err)
	st, _, err := textindex.LoadSchema(ctx, e)
	require.NoError(t, err)
	st.Sketch = "another"
	require.NoError(t, st.Store(ctx, e))
	require.NoError(t, e.Close())
	r = runCLI(t, "", "query", "--db", odd, "--file", name("a.txt"))
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "sketches are of another kind than this build makes: another")

	// --similarity: 0 to 1, with text, on an index with sketches.
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"query", "--db", db, "--fp", "0x1", "--similarity", "0.8"}, "give --text or --file, not --fp"},
		{[]string{"query", "--db", db, "--file", name("a.txt"), "--similarity", "0.5"}, "make it again with add --min-similarity 0.5"},
		{[]string{"find-all", "--db", db, "--similarity", "0.6"}, "below the index's lowest: 0.6 asked"},
		{[]string{"add", "--db", db, "--if-new", "6", "--similarity", "0.5", "--text", pages}, "below the index's lowest"},
		{[]string{"query", "--db", db, "--file", name("a.txt"), "--similarity", "2"}, "--similarity 2: want 0 to 1"},
		{[]string{"find-all", "--similarity", "0.5"}, "it goes with --db"},
		{[]string{"add", "--db", db, "--similarity", "0.5", "--text", pages}, "goes with --text and --if-new"},
	} {
		r := runCLI(t, "", c.args...)
		assert.Equal(t, 2, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.want, c.args)
	}
	plain := filepath.Join(t.TempDir(), "plain")
	r = runCLI(t, "", "add", "--db", plain, "--sketches=false", "--text", pages)
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "find-all", "--db", plain, "--similarity", "0.5")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "this index keeps no sketches")
	r = runCLI(t, "", "find-all", "--db", plain)
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, "similarity", "an index without sketches answers by distance")
}

// oldIndex copies testdata/NAME/idx, an index an older build wrote, to a
// folder of the test's; pages is testdata/v4-text/pages, the files its
// documents came from.
func oldIndex(t *testing.T, name string) (db, pages string) {
	db = filepath.Join(t.TempDir(), "idx")
	require.NoError(t, os.CopyFS(db, os.DirFS(filepath.Join("testdata", name, "idx"))))
	pages, err := filepath.Abs(filepath.Join("testdata", "v4-text", "pages"))
	require.NoError(t, err)
	return db, pages
}

// addNear adds pages' near.txt to an old index of a.txt and other.txt
// with its stored options and checks that find-all reports one pair, with
// near.txt, and that check passes; it returns find-all's output.
func addNear(t *testing.T, db, pages string) string {
	t.Helper()
	r := runCLI(t, "", "add", "--db", db, "--text", filepath.Join(pages, "near.txt"))
	require.Equal(t, 0, r.code, r.stderr)
	pairs := runCLI(t, "", "find-all", "--db", db)
	require.Equal(t, 0, pairs.code, pairs.stderr)
	assert.Equal(t, 1, strings.Count(pairs.stdout, "\n"), pairs.stdout)
	assert.Contains(t, pairs.stdout, "near.txt")
	r = runCLI(t, "", "check", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	return pairs.stdout
}

// TestIndexBeforeSketches: a text index the build before sketches wrote
// (testdata/v4-text: add --text of pages/a.txt and pages/other.txt) opens
// and answers by distance as it did: queries and pairs without
// similarity, --similarity refused, files added with its stored options.
func TestIndexBeforeSketches(t *testing.T) {
	db, pages := oldIndex(t, "v4-text")
	r := runCLI(t, "", "stats", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "documents          2")
	assert.NotContains(t, r.stdout, "sketches")
	assert.Contains(t, r.stdout, "--shingle 2", "the options it was made with")
	r = runCLI(t, "", "query", "--db", db, "--file", filepath.Join(pages, "near.txt"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "1 within distance 3")
	assert.Contains(t, r.stdout, "a.txt")
	assert.NotContains(t, r.stdout, "SIMILARITY")
	r = runCLI(t, "", "query", "--db", db, "--file", filepath.Join(pages, "near.txt"), "--similarity", "0.5")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "keeps no sketches")
	assert.NotContains(t, addNear(t, db, pages), "similarity")
}

// TestTextIndexExactWithin6: a text index the build before
// permutation.ForCandidates wrote (testdata/v5-text-exact6: add --text of
// v4-text's pages/a.txt and pages/other.txt), whose 28 tables find every
// fingerprint within 6 bits, opens with them and answers as it did:
// verified near-duplicates, every one within 6; new text indexes take 12.
func TestTextIndexExactWithin6(t *testing.T) {
	db, pages := oldIndex(t, "v5-text-exact6")
	r := runCLI(t, "", "stats", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "tables             28, answering distances up to 6\n")
	assert.Contains(t, r.stdout, "sketches           32 bytes a document")
	r = runCLI(t, "", "query", "--db", db, "--file", filepath.Join(pages, "near.txt"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "a.txt")
	assert.Contains(t, r.stdout, "SIMILARITY")
	assert.NotContains(t, r.stdout, "other.txt")
	assert.Contains(t, addNear(t, db, pages), "similarity")

	fresh := filepath.Join(t.TempDir(), "new")
	r = runCLI(t, "", "add", "--db", fresh, "--text", pages)
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "stats", "--db", fresh)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "tables             12, answering distances up to 6 (every fingerprint within 5;")
	assert.Contains(t, r.stdout, "every neighbour within 5")

	// Its export goes into a new index as it was: sketches alone, not
	// the records with band keys a new text index keeps.
	exp := runCLI(t, "", "export", "--db", db)
	require.Equal(t, 0, exp.code, exp.stderr)
	imported := filepath.Join(t.TempDir(), "imported")
	r = runCLI(t, exp.stdout, "add", "--db", imported)
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "stats", "--db", imported)
	assert.Contains(t, r.stdout, "sketches           32 bytes a document")
	assert.NotContains(t, r.stdout, "min similarity")
	again := runCLI(t, "", "export", "--db", imported)
	assert.Equal(t, exp.stdout, again.stdout, "the same documents and sketches")
}

// TestMaxSketchAgrees: the export header's bound on a sketch is the
// engine's.
func TestMaxSketchAgrees(t *testing.T) {
	assert.Equal(t, engine.MaxSketch, lines.MaxSketch)
}
