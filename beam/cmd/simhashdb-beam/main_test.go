package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRun runs the command as a user would, once (its flags are the
// process's): a bad line is reported, the rest answered, exit code 1.
func TestRun(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("TMPDIR", dir) // where the command's own temporary folder goes
	in := filepath.Join(dir, "fps.txt")
	require.NoError(t, os.WriteFile(in, []byte("1\n3\nnot a number\n0x10\n3\n"), 0o644))
	out := filepath.Join(dir, "pairs.jsonl")
	var stderr bytes.Buffer
	code := run([]string{"find-all", "-d", "1", "-i", in, "-o", out}, &stderr)
	assert.Equal(t, 1, code, stderr.String())
	got, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"[1, 3]", "[3, 3]"}, strings.Split(strings.TrimSpace(string(got)), "\n"))
	bad, err := os.ReadFile(out + ".bad")
	require.NoError(t, err)
	assert.Contains(t, string(bad), in+":3: ")
	assert.Contains(t, stderr.String(), "1 malformed input lines skipped, listed in "+out+".bad")
	assert.Contains(t, stderr.String(), `"pairs":2`, "the counter counts the lines written, [3, 3] too")
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range left {
		names = append(names, e.Name())
	}
	assert.ElementsMatch(t, []string{"fps.txt", "pairs.jsonl", "pairs.jsonl.bad", "pairs.jsonl.duplicates"}, names, "the run leaves nothing in the temporary folder")
	assert.Equal(t, dir, os.Getenv("TMPDIR"), "the folder is given back")
}

func TestUsage(t *testing.T) {
	var stderr bytes.Buffer
	assert.Equal(t, 2, run([]string{"bogus"}, &stderr))
	assert.Contains(t, stderr.String(), `unknown command "bogus"`)
}
