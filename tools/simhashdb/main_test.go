package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/simhashdb/simhashdb/simhash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var binary string

// TestMain builds the command once; the tests drive the binary as a user
// would.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "simhashdb-cli")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "simhashdb")
	if out, err := exec.Command("go", "build", "-o", binary, ".").CombinedOutput(); err != nil {
		panic("build: " + err.Error() + "\n" + string(out))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

type result struct {
	stdout, stderr string
	code           int
}

func runCLI(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return result{out.String(), errb.String(), code}
}

func TestFingerprintCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		return p
	}
	a := write("a.txt", "The quick brown fox jumps over the lazy dog")
	b := write("sub/b.txt", "Lorem ipsum dolor sit amet")
	page := write("page.html", "<html><script>hidden()</script><p>The quick brown fox jumps over the lazy dog</p></html>")
	f := simhash.Default()
	want := func(text, name string) string { return simhash.Format(f.Text(text)) + "\t" + name + "\n" }

	t.Run("files and directories", func(t *testing.T) {
		r := runCLI(t, "", "fingerprint", a, filepath.Join(dir, "sub"))
		assert.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, want("The quick brown fox jumps over the lazy dog", a)+want("Lorem ipsum dolor sit amet", b), r.stdout)
	})
	t.Run("stdin", func(t *testing.T) {
		r := runCLI(t, "Lorem ipsum dolor sit amet", "fingerprint", "-")
		assert.Equal(t, 0, r.code)
		assert.Equal(t, want("Lorem ipsum dolor sit amet", "-"), r.stdout)
	})
	t.Run("html", func(t *testing.T) {
		r := runCLI(t, "", "fingerprint", "--html", page)
		assert.Equal(t, 0, r.code)
		assert.Equal(t, want("The quick brown fox jumps over the lazy dog", page), r.stdout)
	})
	t.Run("empty input has no fingerprint", func(t *testing.T) {
		r := runCLI(t, "", "fingerprint", "-")
		assert.Equal(t, 1, r.code)
		assert.Empty(t, r.stdout)
		assert.Contains(t, r.stderr, "fingerprint: -: no words to fingerprint")
	})
	t.Run("options change the fingerprint", func(t *testing.T) {
		r := runCLI(t, "", "fingerprint", "--shingle", "1", "--weighting", "binary", "--hash", "fnv1", "--stopwords", a)
		assert.Equal(t, 0, r.code, r.stderr)
		g, _ := simhash.New(simhash.Options{Shingle: 1, Weighting: simhash.Binary, Hash: simhash.FNV1, StopWords: simhash.EnglishStopWords()})
		assert.Equal(t, simhash.Format(g.Text("The quick brown fox jumps over the lazy dog"))+"\t"+a+"\n", r.stdout)
	})
	t.Run("missing file reported, others still printed", func(t *testing.T) {
		missing := filepath.Join(dir, "nope.txt")
		r := runCLI(t, "", "fingerprint", missing, a)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, missing)
		assert.Contains(t, r.stderr, "no such file")
		assert.Equal(t, want("The quick brown fox jumps over the lazy dog", a), r.stdout)
	})
	t.Run("unreadable file", func(t *testing.T) {
		if os.Geteuid() == 0 {
			t.Skip("root reads any file")
		}
		p := write("secret.txt", "x")
		require.NoError(t, os.Chmod(p, 0))
		r := runCLI(t, "", "fingerprint", p)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, p)
	})
	for _, bad := range [][]string{
		{"fingerprint"},
		{"fingerprint", "--shingle", "0", a},
		{"fingerprint", "--shingle", "65", a},
		{"fingerprint", "--weighting", "idf", a},
		{"fingerprint", "--hash", "md5", a},
		{"fingerprint", "--nope", a},
		{"frobnicate"},
		{},
	} {
		t.Run("usage error "+strings.Join(bad, " "), func(t *testing.T) {
			r := runCLI(t, "", bad...)
			assert.Equal(t, 2, r.code)
			assert.NotEmpty(t, r.stderr)
			assert.Empty(t, r.stdout)
		})
	}
	t.Run("help", func(t *testing.T) {
		r := runCLI(t, "", "fingerprint", "--help")
		assert.Equal(t, 0, r.code)
		assert.Contains(t, r.stderr, "Example:")
		r = runCLI(t, "", "help")
		assert.Equal(t, 0, r.code)
		assert.Contains(t, r.stdout, "fingerprint")
		assert.Contains(t, r.stdout, "Exit codes")
	})
}

func TestDemoCommand(t *testing.T) {
	r := runCLI(t, "", "demo")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "Indexed 35 license texts")
	assert.Contains(t, r.stdout, "CC-BY-4.0, CC-BY-NC-4.0, CC-BY-NC-ND-4.0, CC-BY-NC-SA-4.0, CC-BY-ND-4.0, CC-BY-SA-4.0")
	assert.Contains(t, r.stdout, "LPPL-1.3a, LPPL-1.3c")
	assert.Regexp(t, `Apache-2.0 with a new copyright line:\n\s+Apache-2.0\s+similarity 1.00, distance \d`, r.stdout)
	assert.Regexp(t, `MIT with its copyright line filled in:\n\s+MIT\s+similarity 0\.\d\d`, r.stdout, "verified: found where the fingerprint alone, 4 bits away, missed it")
	assert.Regexp(t, `a sentence nobody wrote into a license:\n\s+no near-duplicate`, r.stdout)
	r = runCLI(t, "", "demo", "--similarity", "2")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--similarity 2: want 0 to 1")
}
