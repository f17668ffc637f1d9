package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHTMLKeptWithIndex: --html is one of the options an index keeps: a
// later query of an HTML file without --html reads it as HTML too, a
// contradicting --html is refused, and stats shows it.
func TestHTMLKeptWithIndex(t *testing.T) {
	dir := t.TempDir()
	site := filepath.Join(dir, "site")
	require.NoError(t, os.Mkdir(site, 0o755))
	page := `<html><head><title>t</title><style>.a{color:red}</style></head><body>` +
		`<p>the quick brown fox jumps over the lazy dog and then runs far away into the forest</p></body></html>`
	require.NoError(t, os.WriteFile(filepath.Join(site, "a.html"), []byte(page), 0o644))
	db := filepath.Join(dir, "idx")
	r := runCLI(t, "", "add", "--db", db, "--html", "--text", site)
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "query", "--db", db, "--k", "0", "--file", filepath.Join(site, "a.html"), "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `a.html","fp"`, "read as HTML, as the index was made")
	r = runCLI(t, "", "query", "--db", db, "--html=false", "--file", filepath.Join(site, "a.html"))
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--html false (the index's is true)")
	r = runCLI(t, "", "stats", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "--read html")
	r = runCLI(t, "", "stats", "--db", db, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"read": "html"`)
}

// TestExportCarriesOptions: export | add makes a copy that fingerprints
// text as the original does; into an index with other options it is an
// error naming both.
func TestExportCarriesOptions(t *testing.T) {
	dir := t.TempDir()
	docs := filepath.Join(dir, "docs")
	require.NoError(t, os.Mkdir(docs, 0o755))
	text := "Redistribution and use in source and binary forms, with or without modification, are permitted"
	require.NoError(t, os.WriteFile(filepath.Join(docs, "BSD"), []byte(text), 0o644))
	orig := filepath.Join(dir, "orig")
	r := runCLI(t, "", "add", "--db", orig, "--shingle", "3", "--text", docs)
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "export", "--db", orig)
	require.Equal(t, 0, r.code, r.stderr)
	exported := r.stdout
	require.True(t, strings.HasPrefix(exported, "# simhashdb-export "), exported)

	cp := filepath.Join(dir, "copy")
	r = runCLI(t, exported, "add", "--db", cp)
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "query", "--db", cp, "--k", "0", "--file", filepath.Join(docs, "BSD"), "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `BSD","fp"`, "the copy answers as the original")

	other := filepath.Join(dir, "other")
	r = runCLI(t, "1 0x1\n", "add", "--db", other, "--shingle", "5")
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, exported, "add", "--db", other)
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--shingle 3")
	assert.Contains(t, r.stderr, "the index's is 5")
	r = runCLI(t, exported, "add", "--db", filepath.Join(dir, "x"), "--shingle", "4")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "exported from an index with --shingle 3")
	// Line numbers stay those of the input, header included.
	r = runCLI(t, exported+"bad line\n", "add", "--db", filepath.Join(dir, "y"))
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stderr, "<stdin>:3:")
}

// TestSymlinks: fingerprint and add --text walk folders the same way: a
// link given as an argument is followed, inside a folder a link to a file
// is read and one to a folder is skipped and named; a file is named by its
// own path, whatever link led to it.
func TestSymlinks(t *testing.T) {
	dir := t.TempDir()
	real := filepath.Join(dir, "real")
	require.NoError(t, os.MkdirAll(filepath.Join(real, "sub"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(real, "a.txt"), []byte("alpha beta gamma delta"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(real, "sub", "b.txt"), []byte("epsilon zeta eta theta"), 0o644))
	tree := filepath.Join(dir, "tree")
	require.NoError(t, os.Mkdir(tree, 0o755))
	require.NoError(t, os.Symlink(filepath.Join(real, "a.txt"), filepath.Join(tree, "file-link.txt")))
	require.NoError(t, os.Symlink(filepath.Join(real, "sub"), filepath.Join(tree, "dir-link")))
	linkArg := filepath.Join(dir, "linked")
	require.NoError(t, os.Symlink(real, linkArg))

	for _, args := range [][]string{{"fingerprint"}, {"add", "--db", filepath.Join(dir, "idx"), "--text"}} {
		r := runCLI(t, "", append(args, linkArg)...)
		require.Equal(t, 0, r.code, "%v: %s", args, r.stderr)
		// Named by the files' own paths, not the link's (docName).
		assert.Contains(t, r.stdout, filepath.Join(real, "a.txt"), args)
		assert.Contains(t, r.stdout, filepath.Join(real, "sub", "b.txt"), args)
		r = runCLI(t, "", append(args, tree)...)
		assert.Equal(t, 1, r.code, args)
		if args[0] == "fingerprint" {
			assert.Contains(t, r.stdout, filepath.Join(real, "a.txt"), args)
		} else {
			assert.Contains(t, r.stderr, "1 files: 0 added, 0 replaced, 1 unchanged", "the link's file is the document stored through the folder's link")
		}
		assert.NotContains(t, r.stdout, "b.txt", args)
		assert.Contains(t, r.stderr, filepath.Join(tree, "dir-link")+": a symbolic link to a folder: skipped", args)
	}
}

// TestSmallUsageRules: the small things a new user met.
func TestSmallUsageRules(t *testing.T) {
	dir := t.TempDir()
	afile := filepath.Join(dir, "afile")
	require.NoError(t, os.WriteFile(afile, []byte("x"), 0o644))
	busy := filepath.Join(dir, "busy")
	require.NoError(t, os.Mkdir(busy, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(busy, "notes.txt"), []byte("x"), 0o644))
	for _, c := range []struct {
		args []string
		code int
		says string
	}{
		{[]string{"stats", "--db", afile}, 1, "is a file, not an index folder"},
		{[]string{"add", "--db", afile}, 1, "is a file, not a folder"},
		{[]string{"stats", "--db", busy}, 1, "an index is created only in a new or empty folder"},
		{[]string{"add", "--db", filepath.Join(dir, "n"), "--expect", "-5"}, 2, "--expect -5"},
		{[]string{"add", "--db", filepath.Join(dir, "n"), "--k", "0"}, 2, "a K of 1 to 16"},
		{[]string{"add", "--db", filepath.Join(dir, "n"), "--design", "flash"}, 2, "--design \"flash\": want memory or disk"},
		{[]string{"query", "--db", afile, "--fp", "1", "extra"}, 2, `unexpected arguments ["extra"]: query takes flags only`},
		{[]string{"stats", "--db", afile, "extra"}, 2, `unexpected arguments ["extra"]: stats takes flags only`},
		{[]string{"check", "--bogus"}, 2, "simhashdb check: flag provided but not defined: -bogus (simhashdb check --help lists the flags)"},
	} {
		r := runCLI(t, "1 0x1\n", c.args...)
		assert.Equal(t, c.code, r.code, "%v: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.says, c.args)
		assert.NotContains(t, r.stderr, "create one with", c.args)
	}
	r := runCLI(t, "", "stats", "--bogus")
	assert.Equal(t, 1, strings.Count(r.stderr, "\n"), "one line, not the whole help: %s", r.stderr)
	r = runCLI(t, "", "--version")
	require.Equal(t, 0, r.code)
	assert.NotContains(t, r.stdout, "(devel)")
}

// TestDesignFlag: --design disk makes a new index of the design with the
// fewest disk reads for its expected size (4 tables at 30M, k = 3, where
// the default keeps 10); on an existing index it changes nothing, as
// --expect does.
func TestDesignFlag(t *testing.T) {
	dir := t.TempDir()
	tables := func(db string) int {
		r := runCLI(t, "", "stats", "--db", db, "--json")
		require.Equal(t, 0, r.code, r.stderr)
		var st struct {
			Tables []json.RawMessage `json:"tables"`
		}
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
		return len(st.Tables)
	}
	for _, c := range []struct {
		design string
		want   int
	}{{"memory", 10}, {"disk", 4}} {
		db := filepath.Join(dir, c.design)
		r := runCLI(t, "1 0x1\n", "add", "--db", db, "--expect", "30000000", "--design", c.design)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, c.want, tables(db), c.design)
		r = runCLI(t, "2 0x2\n", "add", "--db", db, "--design", "disk")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, c.want, tables(db), "%s, then added to with --design disk", c.design)
	}
}
