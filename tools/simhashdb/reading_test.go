package main

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/textindex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	readingWords = "the quick brown fox jumps over the lazy dog and then runs far away into the forest"
	readingPage  = "<!DOCTYPE html><html><body><nav>Home | Next chapter</nav><p>" + readingWords + "</p></body></html>"
	readingMan   = ".\\\" a manual page's source\n.TH FOX 1 2024\n.SH NAME\nfox \\- \\fBjumps\\fR over the lazy dog\n"
	readingSVG   = `<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><path d="M 1 2 L 3 4 L 5 6"/></svg>`
)

// readingFolder writes a folder of files of every kind add --text meets.
func readingFolder(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "files")
	require.NoError(t, os.Mkdir(dir, 0o755))
	for name, b := range map[string][]byte{
		"plain.txt":        []byte(readingWords),
		"page.txt":         []byte(readingPage), // HTML by its content, whatever its name
		"changelog.gz":     gzipBytes(t, "a changelog, compressed as Debian ships it: "+readingWords),
		"fox.1.gz":         gzipBytes(t, readingMan),
		"drawing.svg":      []byte(readingSVG),
		"logo.png":         []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00"),
		"empty.txt":        nil,
		"only-markup.html": []byte("<html><script>var x = 1</script></html>"),
	} {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), b, 0o644))
	}
	return dir
}

func gzipBytes(t *testing.T, s string) []byte {
	t.Helper()
	var gz bytes.Buffer
	z := gzip.NewWriter(&gz)
	_, err := z.Write([]byte(s))
	require.NoError(t, err)
	require.NoError(t, z.Close())
	return gz.Bytes()
}

// TestReadByContent: a new index reads files by their content with the
// latest pipeline: compressed files decompressed, HTML with its
// navigation (--skip-nav skips it), manual pages as man shows them,
// binaries skipped and counted, files without words (an SVG drawing)
// named and not stored.
func TestReadByContent(t *testing.T) {
	files := readingFolder(t)
	db := filepath.Join(t.TempDir(), "idx")
	// Fingerprints as 'simhashdb fingerprint' makes them: an index
	// without sketches (a text index fingerprints single words).
	r := runCLI(t, "", "add", "--db", db, "--sketches=false", "--text", files)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "8 files: 4 added, 0 replaced, 0 unchanged; 1 binary files skipped; 3 files without words skipped")
	assert.Contains(t, r.stderr, "empty.txt: no words: not stored")
	assert.Contains(t, r.stderr, "only-markup.html: no words: not stored")
	assert.Contains(t, r.stderr, "drawing.svg: no words: not stored")
	v2, err := simhash.New(simhash.Options{Pipeline: simhash.LatestPipeline})
	require.NoError(t, err)
	stored := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
		f := strings.Split(line, "\t")
		require.Len(t, f, 3, line)
		stored[filepath.Base(f[2])] = f[1]
	}
	page, err := v2.HTML(strings.NewReader(readingPage))
	require.NoError(t, err)
	assert.Equal(t, simhash.Format(v2.Text("Home | Next chapter "+readingWords)), simhash.Format(page), "navigation kept by default")
	assert.Equal(t, map[string]string{
		"plain.txt":    simhash.Format(v2.Text(readingWords)),
		"page.txt":     simhash.Format(page),
		"changelog.gz": simhash.Format(v2.Text("a changelog, compressed as Debian ships it: " + readingWords)),
		"fox.1.gz":     simhash.Format(v2.Text("FOX 1 2024 NAME fox - jumps over the lazy dog")),
	}, stored)

	r = runCLI(t, "", "stats", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "--pipeline v3 --read auto --skip-nav false")
	// An index made with pipeline v2 keeps reading as v2 did: a manual
	// page's source as text, an SVG's path data as words.
	old := filepath.Join(t.TempDir(), "v2")
	r = runCLI(t, "", "add", "--db", old, "--sketches=false", "--pipeline", "v2", "--text", filepath.Join(files, "plain.txt"))
	require.Equal(t, 0, r.code, r.stderr)
	r = runCLI(t, "", "add", "--db", old, "--text", filepath.Join(files, "fox.1.gz"), filepath.Join(files, "drawing.svg"))
	require.Equal(t, 0, r.code, r.stderr)
	pv2, err := simhash.New(simhash.Options{Pipeline: simhash.PipelineV2})
	require.NoError(t, err)
	assert.Contains(t, r.stdout, simhash.Format(pv2.Text(readingMan)))
	assert.Contains(t, r.stdout, simhash.Format(pv2.Text(readingSVG)))
	// --skip-nav is kept with the index too.
	nav := filepath.Join(t.TempDir(), "nav")
	r = runCLI(t, "", "add", "--db", nav, "--sketches=false", "--skip-nav", "--text", filepath.Join(files, "page.txt"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, simhash.Format(v2.Text(readingWords)))
	r = runCLI(t, "", "query", "--db", nav, "--file", filepath.Join(files, "page.txt"), "--k", "0")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "page.txt", "queried as it was added: without navigation")
	// fingerprint reads as add does; --read text forces plain text.
	r = runCLI(t, "", "fingerprint", filepath.Join(files, "page.txt"), filepath.Join(files, "logo.png"))
	assert.Equal(t, 1, r.code)
	assert.Contains(t, r.stdout, stored["page.txt"])
	assert.Contains(t, r.stderr, "logo.png: binary content, not text")
	r = runCLI(t, "", "fingerprint", "--read", "text", filepath.Join(files, "page.txt"))
	require.Equal(t, 0, r.code, r.stderr)
	assert.NotContains(t, r.stdout, stored["page.txt"])
	r = runCLI(t, "", "query", "--db", db, "--read", "text", "--text", "x")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--read text (the index's is auto)")
	r = runCLI(t, "", "fingerprint", "--read", "xml", "-")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, `--read "xml": want auto, text, html or man`)
	r = runCLI(t, "", "fingerprint", "--read", "man", filepath.Join(files, "fox.1.gz"))
	require.Equal(t, 0, r.code, "a compressed file read as man is decompressed: %s", r.stderr)
	assert.Contains(t, r.stdout, stored["fox.1.gz"], "as the default reading reads it")
	r = runCLI(t, "", "fingerprint", "--pipeline", "v4", "-")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, `--pipeline "v4": want v1, v2 or v3`)
}

// TestOldIndexKeepsPipeline: an index made before pipelines had versions
// keeps fingerprinting text as it did (v1, plain text), whether it stores
// its other options or none.
func TestOldIndexKeepsPipeline(t *testing.T) {
	files := readingFolder(t)
	page := filepath.Join(files, "page.txt")
	v1 := simhash.Default()
	for name, setting := range map[string]string{
		"options without pipeline": `{"shingle":2,"weighting":"tf","stopwords":false,"hash":"xxhash","html":false}`,
		"no options":               "",
	} {
		t.Run(name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "idx")
			// engine.Open makes an index as a program would, without the
			// command's settings; add stores the setting as old versions did.
			e, err := engine.Open(db, engine.Options{})
			require.NoError(t, err)
			require.NoError(t, e.Insert(context.Background(), engine.Doc{ID: 1, Fingerprint: 1}))
			if setting != "" {
				require.NoError(t, e.SetMeta(context.Background(), textindex.SchemaSetting, []byte(setting)))
			}
			require.NoError(t, e.Close())
			r := runCLI(t, "", "query", "--db", db, "--file", page, "--json")
			require.Equal(t, 0, r.code, r.stderr)
			var ans struct{ Query string }
			require.NoError(t, json.Unmarshal([]byte(r.stdout), &ans))
			assert.Equal(t, simhash.Format(v1.Text(readingPage)), ans.Query, "read as v1 plain text")
		})
	}
}
