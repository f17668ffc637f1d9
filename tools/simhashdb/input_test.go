package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simhashdb/simhashdb/api"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOutputReadsBack: every fingerprint the tool prints is read back as
// the same fingerprint by every command that takes one, and fingerprint's
// own lines as they are; decimal is decimal at any length, bare hex is
// read only with --hex.
func TestOutputReadsBack(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "doc.txt")
	require.NoError(t, os.WriteFile(doc, []byte("the quick brown fox jumps over the lazy dog again and again"), 0o644))
	r := runCLI(t, "", "fingerprint", doc)
	require.Equal(t, 0, r.code, r.stderr)
	fpLine := r.stdout
	fp, _, ok := strings.Cut(r.stdout, "\t")
	require.True(t, ok, r.stdout)
	require.True(t, strings.HasPrefix(fp, "0x"), "printed with 0x: %s", fp)

	db := filepath.Join(dir, "idx")
	r = runCLI(t, "7 "+fp+" doc\n", "add", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "query", "--db", db, "--fp", fp, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"fp":"`+fp+`"`)
	assert.Contains(t, r.stdout, `"query":"`+fp+`"`)
	r = runCLI(t, fp+"\n", "batch", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"id":7`)

	// fingerprint's own lines, as they are.
	line := fpLine
	r = runCLI(t, line, "batch", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"qid":"`+doc+`"`)
	assert.Contains(t, r.stdout, `"id":7`)
	r = runCLI(t, line+line, "find-all", "-d", "0")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, `["`+fp+`", "`+fp+`"]`+"\n", r.stdout, "hex in, hex out")
	r = runCLI(t, line, "add", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "query", "--db", db, "--k", "0", "--fp", fp, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"name":"`+doc+`"`, "stored, named by the path")

	// Decimal of exactly 16 digits is decimal (1 random fingerprint in
	// about 2,000 is written so), in every command.
	r = runCLI(t, "1 4682519354896071\n", "add", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "query", "--db", db, "--k", "0", "--fp", "4682519354896071", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"id":1`)
	r = runCLI(t, "4682519354896071\n", "batch", "--db", db, "--k", "0")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"id":1`)
	r = runCLI(t, "4682519354896071\n4682519354896070\n", "find-all", "-d", "1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "[4682519354896070, 4682519354896071]\n", r.stdout)
	// Bare hex: refused with a word of how, read with --hex.
	r = runCLI(t, "", "query", "--db", db, "--fp", "10a8cdf1a3a8d1c7")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "write it as 0x10a8cdf1a3a8d1c7")
	r = runCLI(t, "", "query", "--db", db, "--k", "0", "--hex", "--fp", "0010a2b9fecd6ec7", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"id":1`, "0x0010a2b9fecd6ec7 is 4682519354896071")
	r = runCLI(t, "2 0010a2b9fecd6ec7\n", "add", "--db", db, "--hex")
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "get", "--db", db, "2")
	assert.Equal(t, "2 0x0010a2b9fecd6ec7\n", r.stdout)
}

// TestFindAllInputs: find-all reads every --input given, globs included,
// as one set, names the file of a bad line, and prints fingerprints in the
// form it read them or as --print says.
func TestFindAllInputs(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	a := write("a.txt", "0x10\n0x20\n")
	write("b.txt", "0x11\n")
	write("c.txt", "0x21\n")
	r := runCLI(t, "", "find-all", "-d", "1", "-i", a, "-i", filepath.Join(dir, "[bc].txt"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, `["0x0000000000000010", "0x0000000000000011"]`+"\n"+`["0x0000000000000020", "0x0000000000000021"]`+"\n", r.stdout)
	r = runCLI(t, "", "find-all", "-d", "1", "-i", a, "-i", filepath.Join(dir, "b.txt"), "--print", "decimal")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "[16, 17]\n", r.stdout)
	mixed := write("d.txt", "17\n")
	r = runCLI(t, "", "find-all", "-d", "1", "-i", a, "-i", mixed)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "[16, 17]\n", r.stdout, "decimal when the inputs mix forms")
	r = runCLI(t, "", "find-clusters", "-d", "1", "-i", filepath.Join(dir, "*.txt"), "--print", "hex")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"0x0000000000000010", "0x0000000000000011", "0x0000000000000011"`)
	bad := write("e.txt", "0x1\nnope\n")
	r = runCLI(t, "", "find-all", "-i", a, "-i", bad)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, bad+":2:")
	r = runCLI(t, "", "find-all", "-i", filepath.Join(dir, "*.none"))
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "no file matches")
}

// TestLongLines: a line longer than any record is reported with its line
// number and length, and skipped; the lines after it are stored.
func TestLongLines(t *testing.T) {
	db := filepath.Join(t.TempDir(), "idx")
	var in strings.Builder
	in.WriteString("1 0x1 first\n")
	in.WriteString("2 0x2 " + strings.Repeat("n", 70000) + "\n")
	in.WriteString("3 0x3 " + strings.Repeat("n", 50000) + "\n")
	in.WriteString("4 0x4 after\n")
	r := runCLI(t, in.String(), "add", "--db", db)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "<stdin>:2: line of 70006 bytes, longer than any record")
	assert.Contains(t, r.stderr, "<stdin>:3: line of 50006 bytes")
	r = runCLI(t, "", "query", "--db", db, "--fp", "0x4", "--k", "0", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"name":"after"`, "the line after the long ones is stored")
	r = runCLI(t, "0x1\n"+strings.Repeat("9", 70000)+"\n", "find-all", "-d", "1")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "<stdin>:2: line of 70000 bytes")
}

// TestFlagsAnywhere: flags after the arguments are flags, and all are
// read before anything is written.
func TestFlagsAnywhere(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "a.txt")
	require.NoError(t, os.WriteFile(doc, []byte("alpha beta gamma delta epsilon"), 0o644))
	want := runCLI(t, "", "fingerprint", "--shingle", "1", doc)
	require.Equal(t, 0, want.code, want.stderr)
	got := runCLI(t, "", "fingerprint", doc, "--shingle", "1")
	require.Equal(t, 0, got.code, got.stderr)
	assert.Equal(t, want.stdout, got.stdout)
	db := filepath.Join(dir, "idx")
	r := runCLI(t, "", "add", "--db", db, "--text", doc, "--shingle", "1")
	require.Equal(t, 0, r.code, r.stderr)
	fp, _, _ := strings.Cut(want.stdout, "\t")
	assert.Contains(t, r.stdout, fp, "stored with --shingle 1")
	// A bad flag after the arguments stops the command before it writes.
	db2 := filepath.Join(dir, "idx2")
	r = runCLI(t, "", "add", "--db", db2, "--text", doc, "--shingle", "x")
	assert.Equal(t, 2, r.code)
	_, err := os.Stat(db2)
	assert.True(t, os.IsNotExist(err), "nothing written")
	// -- ends the flags: what follows is an argument.
	r = runCLI(t, "", "fingerprint", "--", "--shingle")
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "--shingle")
}

// TestIndexKeepsFingerprintOptions: an index created with fingerprint
// options uses them for every later text query and add; a flag that
// contradicts them is a usage error.
func TestIndexKeepsFingerprintOptions(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	require.NoError(t, os.Mkdir(docs, 0o755))
	text := "alpha beta gamma delta epsilon zeta eta theta"
	require.NoError(t, os.WriteFile(filepath.Join(docs, "a.txt"), []byte(text), 0o644))
	db := filepath.Join(dir, "idx")
	r := runCLI(t, "", "add", "--db", db, "--shingle", "1", "--text", docs)
	require.Equal(t, 0, r.code, r.stderr)
	// Queried with default flags: the index's options are used.
	r = runCLI(t, "", "query", "--db", db, "--k", "0", "--text", text, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `a.txt","fp"`, "found with the stored --shingle 1")
	r = runCLI(t, text, "query", "--db", db, "--k", "0", "--file", "-", "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `a.txt","fp"`)
	// The same options given again are fine; others are refused.
	r = runCLI(t, "", "query", "--db", db, "--shingle", "1", "--text", text)
	assert.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "query", "--db", db, "--shingle", "2", "--text", text)
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--shingle 2 (the index's is 1)")
	r = runCLI(t, "", "add", "--db", db, "--hash", "fnv1", "--text", docs)
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--hash fnv1 (the index's is xxhash)")
}

// TestNewIndexFolder: an index is created only in a new or empty folder,
// and add --text does not read the index's own files.
func TestNewIndexFolder(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "LICENSE"), []byte("text"), 0o644))
	r := runCLI(t, "1 0x1\n", "add", "--db", dir)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "create an index in a new or empty folder")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 1, "nothing written beside LICENSE")

	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.Mkdir(empty, 0o755))
	r = runCLI(t, "1 0x1\n", "add", "--db", empty)
	require.Equal(t, 0, r.code, r.stderr)

	// --text over a folder that holds the index: the index is not read.
	r = runCLI(t, "", "add", "--db", empty, "--text", dir)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "LICENSE")
	assert.NotContains(t, r.stdout, filepath.Join(empty, "pebble"))
	assert.Contains(t, r.stderr, "skipped")
	r = runCLI(t, "", "add", "--db", empty, "--text", filepath.Join(empty, "wal"))
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "inside the index")
}

// TestAddTextBatches: add --text reports progress as JSON, its last line
// once, and --bulk loads the files at once; both store every file.
func TestAddTextBatches(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	require.NoError(t, os.Mkdir(docs, 0o755))
	for i := range 30 {
		require.NoError(t, os.WriteFile(filepath.Join(docs, fmt.Sprintf("%02d.txt", i)), []byte(fmt.Sprintf("document number %d of thirty", i)), 0o644))
	}
	for _, bulk := range []bool{false, true} {
		db := filepath.Join(dir, fmt.Sprintf("idx-%v", bulk))
		args := []string{"add", "--db", db, "--text", docs, "--progress", "json"}
		if bulk {
			args = append(args, "--bulk")
		}
		r := runCLI(t, "", args...)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Len(t, strings.Split(strings.TrimSpace(r.stdout), "\n"), 30)
		var last struct {
			Durable int64
			Elapsed float64 `json:"elapsed_s"`
		}
		n, finalEarly := 0, 0 // lines saying all 30 are durable within the first second
		for _, l := range strings.Split(strings.TrimSpace(r.stderr), "\n") {
			if strings.HasPrefix(l, "{") {
				require.NoError(t, json.Unmarshal([]byte(l), &last))
				if last.Durable == 30 && last.Elapsed < 1 {
					finalEarly++
				}
				n++
			}
		}
		require.Positive(t, n, "progress lines: %q", r.stderr)
		assert.EqualValues(t, 30, last.Durable)
		assert.LessOrEqual(t, finalEarly, 1, "the last line is not printed twice: %s", r.stderr)
		r = runCLI(t, "", "stats", "--db", db, "--json")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, `"documents": 30`, "bulk=%v", bulk)
	}
}

// TestGetExport: documents read back by id, and a whole index exported as
// add's input and rebuilt with another K.
func TestGetExport(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "idx")
	in := "1 0x0123456789abcdef https://a.example/\n2 0x0123456789abcdee\n3 0xff00ff00ff00ff00 a name with spaces\n"
	r := runCLI(t, in, "add", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "4 0x1 in the memtable\n", "add", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)

	r = runCLI(t, "", "get", "--db", db, "3", "9", "1")
	assert.Equal(t, 1, r.code)
	assert.Equal(t, "3 0xff00ff00ff00ff00 a name with spaces\n1 0x0123456789abcdef https://a.example/\n", r.stdout)
	assert.Contains(t, r.stderr, "9: not stored")
	r = runCLI(t, "", "get", "--db", db, "--json", "2")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, `{"id":2,"name":"","fp":"0x0123456789abcdee"}`+"\n", r.stdout)

	r = runCLI(t, "", "export", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	header, records, _ := strings.Cut(r.stdout, "\n")
	assert.Contains(t, header, `# simhashdb-export {"fingerprint":{"shingle":2,`)
	assert.Equal(t, in+"4 0x0000000000000001 in the memtable\n", records)
	k4 := filepath.Join(dir, "idx-k4")
	r2 := runCLI(t, r.stdout, "add", "--db", k4, "--k", "4")
	require.Equal(t, 0, r2.code, r2.stderr)
	r2 = runCLI(t, "", "export", "--db", k4)
	require.Equal(t, 0, r2.code, r2.stderr)
	assert.Equal(t, r.stdout, r2.stdout, "rebuilt whole")
	r2 = runCLI(t, "", "stats", "--db", k4, "--json")
	assert.Contains(t, r2.stdout, `"k": 4`)

	r = runCLI(t, "", "delete", "--db", db, "2", "2", "77")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "deleted 1 document; not stored: 77\n", r.stdout)
}

// TestStarClusters: --method star keeps every member within --distance of
// its leader, where components chain.
func TestStarClusters(t *testing.T) {
	in := "1\n2\n3\n7\n15\n31\n1000000\n"
	r := runCLI(t, in, "find-clusters", "-d", "1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "[1, 2, 3, 7, 15, 31]\n", r.stdout, "a chain: 1 and 31 are 4 bits apart")
	r = runCLI(t, in, "find-clusters", "-d", "1", "--method", "star")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "[1, 3]\n[7, 15]\n", r.stdout)
	r = runCLI(t, in, "find-clusters", "--method", "nearest")
	assert.Equal(t, 2, r.code)

	db := filepath.Join(t.TempDir(), "idx")
	r = runCLI(t, "10 0x7\n11 0xf\n12 0x1f\n13 0x7\n", "add", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "find-clusters", "--db", db, "-d", "1", "--method", "star")
	require.Equal(t, 0, r.code, r.stderr)
	var c api.Cluster
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &c))
	assert.Equal(t, []api.Doc{{ID: 10, FP: "0x0000000000000007"}, {ID: 11, FP: "0x000000000000000f"}, {ID: 13, FP: "0x0000000000000007"}}, c.Documents,
		"the first document leads; 12 is 2 bits from it")
}

// TestSmallerThings: --version, fingerprint --json, --html for add --text
// and query.
func TestSmallerThings(t *testing.T) {
	r := runCLI(t, "", "--version")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Regexp(t, `^simhashdb \S+ .*\(go1\.\d+`, r.stdout)

	dir := t.TempDir()
	page := filepath.Join(dir, "page.html")
	require.NoError(t, os.WriteFile(page, []byte("<html><head><title>T</title><script>var x = 1;</script></head><body><p>The quick brown fox jumps over the lazy dog</p></body></html>"), 0o644))
	r = runCLI(t, "", "fingerprint", "--json", "--html", page)
	require.Equal(t, 0, r.code, r.stderr)
	var fp struct{ Path, FP string }
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &fp))
	assert.Equal(t, page, fp.Path)

	db := filepath.Join(dir, "idx")
	r = runCLI(t, "", "add", "--db", db, "--sketches=false", "--html", "--text", page)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, fp.FP, "add --text --html fingerprints the visible text")
	r = runCLI(t, "", "query", "--db", db, "--k", "0", "--html", "--file", page, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"query":"`+fp.FP+`"`)
	assert.Contains(t, r.stdout, `"name":"`+page+`"`)
}
