package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOutputReadsBack: every fingerprint the tool prints is read back as
// the same fingerprint by every command that takes one; a bare 16-digit
// number, which could be hex printed without 0x, is refused, not guessed.
func TestOutputReadsBack(t *testing.T) {
	dir := t.TempDir()
	doc := filepath.Join(dir, "doc.txt")
	require.NoError(t, os.WriteFile(doc, []byte("the quick brown fox jumps over the lazy dog again and again"), 0o644))
	r := runCLI(t, "", "fingerprint", doc)
	require.Equal(t, 0, r.code, r.stderr)
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

	// The bug a user hit: 16 hex digits that are all decimal digits.
	r = runCLI(t, "", "query", "--db", db, "--fp", "4682519354896071")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "16 digits without 0x may be hexadecimal")
	r = runCLI(t, "", "query", "--db", db, "--fp", "04682519354896071") // decimal, said so
	assert.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "1 4682519354896071\n", "add", "--db", db)
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "<stdin>:1:")
	// find-all and find-clusters read decimal as simhash-cpp does.
	r = runCLI(t, "4682519354896071\n4682519354896070\n", "find-all", "-d", "1")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "[4682519354896070, 4682519354896071]\n", r.stdout)
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
