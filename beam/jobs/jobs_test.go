package jobs

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/apache/beam/sdks/v2/go/pkg/beam"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/simhashdb/simhashdb/beam/neardup"
	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/simhash"
)

// simhashdbBin is the simhashdb command, built once, whose output the jobs
// must match.
var simhashdbBin string

func TestMain(m *testing.M) {
	flag.Parse()
	beam.Init()
	// Prism logs every job at Info.
	slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})))
	dir, err := os.MkdirTemp("", "simhashdb-beam-test")
	if err != nil {
		panic(err)
	}
	// Beam's loopback runs leave a file in the temporary folder each
	// (runnerlib.Execute): in this one, removed below.
	os.Setenv("TMPDIR", dir)
	simhashdbBin = filepath.Join(dir, "simhashdb")
	// Built in the core module (its dependencies are not this module's).
	build := exec.Command("go", "build", "-o", simhashdbBin, "./tools/simhashdb")
	build.Dir = filepath.Join("..", "..")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		panic(fmt.Sprintf("building simhashdb: %v", err))
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func writeTestFile(t *testing.T, path string, ls []string) {
	t.Helper()
	require.NoError(t, os.WriteFile(path, []byte(strings.Join(ls, "\n")+"\n"), 0o644))
}

func decimalLines(fps []uint64) []string {
	out := make([]string, len(fps))
	for i, v := range fps {
		out[i] = fmt.Sprint(v)
	}
	return out
}

// readLines returns the lines of the files glob matches, sorted.
func readLines(t *testing.T, glob string) []string {
	t.Helper()
	files, err := filepath.Glob(glob)
	require.NoError(t, err)
	require.NotEmpty(t, files, glob)
	var out []string
	for _, f := range files {
		fd, err := os.Open(f)
		require.NoError(t, err)
		sc := bufio.NewScanner(fd)
		sc.Buffer(nil, 1<<26)
		for sc.Scan() {
			out = append(out, sc.Text())
		}
		require.NoError(t, sc.Err())
		fd.Close()
	}
	slices.Sort(out)
	return out
}

// cli runs simhashdb and returns its output file's lines, sorted.
func cli(t *testing.T, out string, args ...string) []string {
	t.Helper()
	cmd := exec.Command(simhashdbBin, args...)
	b, err := cmd.CombinedOutput()
	require.NoError(t, err, "simhashdb %v: %s", args, b)
	return readLines(t, out)
}

func TestFindAllAndClusters(t *testing.T) {
	ctx := context.Background()
	for _, ds := range datasets() {
		dir := t.TempDir()
		in := filepath.Join(dir, "fps.txt")
		writeTestFile(t, in, decimalLines(ds.fps))
		for k := range 4 {
			name := fmt.Sprintf("%s/k=%d", ds.name, k)
			out := filepath.Join(dir, fmt.Sprintf("pairs-%d", k))
			rep, err := FindAll(ctx, Config{Input: in, Output: out, Distance: k})
			require.NoError(t, err, name)
			got := readLines(t, out)
			want := oraclePairs(ds.fps, k)
			sameLines(t, want, got, "find-all %s against the oracle", name)
			sameLines(t, cli(t, out+".cli", "find-all", "-d", fmt.Sprint(k), "-i", in, "-o", out+".cli"), got, "find-all %s against simhashdb", name)
			assert.Equal(t, int64(len(ds.fps)), rep.Counters[neardup.CounterFingerprints], name)
			assert.Zero(t, rep.BadLines(), name)
			if k == 0 {
				sameLines(t, oracleDuplicates(ds.fps), readLines(t, out+".duplicates"), "duplicate groups of %s", name)
			}

			out = filepath.Join(dir, fmt.Sprintf("clusters-%d", k))
			rep, err = FindClusters(ctx, Config{Input: in, Output: out, Distance: k})
			require.NoError(t, err, name)
			got = readLines(t, out)
			sameLines(t, oracleClusters(ds.fps, k), got, "find-clusters %s against the oracle", name)
			sameLines(t, cli(t, out+".cli", "find-clusters", "-d", fmt.Sprint(k), "-i", in, "-o", out+".cli"), got, "find-clusters %s against simhashdb", name)
			assert.Equal(t, int64(len(got)), rep.Counters[neardup.CounterClusters], name)
			t.Logf("%s: %d pairs, %d clusters in %d star rounds", name, len(want), len(got), rep.Counters["rounds"])
		}
	}
}

func TestBatch(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	for _, ds := range datasets() {
		dir := t.TempDir()
		// Stored: every fingerprint as a document with an id and a name.
		var docs []doc
		var recs []string
		for i, v := range ds.fps[:min(len(ds.fps), 4000)] {
			d := doc{uint64(i + 1), v, fmt.Sprintf("https://example.com/%d", i)}
			docs = append(docs, d)
			recs = append(recs, fmt.Sprintf("%d 0x%016x %s", d.id, d.fp, d.name))
		}
		stored := filepath.Join(dir, "stored.txt")
		writeTestFile(t, stored, recs)
		// Queries: stored fingerprints, near ones at 0..4 bits, and others.
		var qs []uint64
		for range 300 {
			v := docs[rng.IntN(len(docs))].fp
			qs = append(qs, flip(rng, v, rng.IntN(5)))
		}
		qs = append(qs, 0, ^uint64(0), rng.Uint64())
		queries := filepath.Join(dir, "queries.txt")
		var ql []string
		for _, q := range qs {
			ql = append(ql, fmt.Sprintf("%#x", q)) // batch reads 16 bare digits as ambiguous
		}
		writeTestFile(t, queries, ql)
		idx := filepath.Join(dir, "idx")
		out, err := exec.Command(simhashdbBin, "add", "--db", idx, "--input", stored).CombinedOutput()
		require.NoError(t, err, "%s", out)
		for k := range 4 {
			name := fmt.Sprintf("%s/k=%d", ds.name, k)
			o := filepath.Join(dir, fmt.Sprintf("answers-%d", k))
			_, err := Batch(ctx, Config{Input: queries, Stored: stored, Output: o, Distance: k})
			require.NoError(t, err, name)
			got := readLines(t, o)
			sameLines(t, oracleBatch(qs, docs, k), got, "batch %s against the oracle", name)
			sameLines(t, cli(t, o+".cli", "batch", "--db", idx, "--k", fmt.Sprint(k), "--input", queries, "--output", o+".cli"), got, "batch %s against simhashdb", name)
		}
		// In chunks: several pipelines, each holding a part of the queries.
		o := filepath.Join(dir, "chunked")
		rep, err := Batch(ctx, Config{Input: queries, Stored: stored, Output: o, Distance: 3, QueryChunk: 100})
		require.NoError(t, err)
		sameLines(t, oracleBatch(qs, docs, 3), readLines(t, o+"-*-of-*"), "batch %s in chunks", ds.name)
		assert.Greater(t, rep.Pipelines, 1)
	}
}

func TestShardedOutput(t *testing.T) {
	ds := datasets()[2]
	dir := t.TempDir()
	in := filepath.Join(dir, "fps.txt")
	writeTestFile(t, in, decimalLines(ds.fps))
	out := filepath.Join(dir, "pairs")
	_, err := FindAll(context.Background(), Config{Input: in, Output: out, Distance: 3, Shards: 4})
	require.NoError(t, err)
	files, _ := filepath.Glob(out + "-*-of-00004")
	assert.Len(t, files, 4)
	sameLines(t, oraclePairs(ds.fps, 3), readLines(t, out+"-*-of-00004"))

	// find-clusters writes its rounds' edges in as many shards.
	out = filepath.Join(dir, "clusters")
	_, err = FindClusters(context.Background(), Config{Input: in, Output: out, Distance: 3, Shards: 4})
	require.NoError(t, err)
	assert.NoDirExists(t, out+".tmp", "the rounds' edges are removed")
	sameLines(t, oracleClusters(ds.fps, 3), readLines(t, out+"-*-of-00004"))
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "fps.txt")
	good := []uint64{1, 3, 1 << 40, 1<<40 | 1, 0}
	writeTestFile(t, in, []string{
		"1", "3", "", "0xzz", "1099511627776", "18446744073709551616",
		strings.Repeat("7", 5000), "0x10000000001", "not a fingerprint at all", "0",
	})
	out := filepath.Join(dir, "pairs")
	rep, err := FindAll(context.Background(), Config{Input: in, Output: out, Distance: 1})
	require.NoError(t, err)
	sameLines(t, oraclePairs(good, 1), readLines(t, out))
	assert.Empty(t, readLines(t, out+".duplicates"))
	assert.EqualValues(t, 5, rep.BadLines())
	assert.EqualValues(t, 10, rep.Counters[neardup.CounterLines])
	bad := readLines(t, out+".bad")
	require.Len(t, bad, 5)
	for i, line := range []int{3, 4, 6, 7, 9} {
		assert.Contains(t, bad, bad[i]) // sorted; check each line number below
		assert.True(t, slices.ContainsFunc(bad, func(s string) bool { return strings.HasPrefix(s, fmt.Sprintf("%s:%d: ", in, line)) }), "line %d reported: %q", line, bad)
	}
	assert.True(t, slices.ContainsFunc(bad, func(s string) bool { return strings.Contains(s, "larger than 2^64-1") }), "%q", bad)
}

// TestDocuments: text read as simhashdb reads it, with the latest pipeline
// unless told another; binaries and files without words are reported, not
// read.
func TestDocuments(t *testing.T) {
	dir := t.TempDir()
	texts := []string{
		"the quick brown fox jumps over the lazy dog in release 3.79 of 2024",
		"the quick brown fox jumps over the lazy dog in release 3.79 of 2024",
		"the quick brown fox jumped over the lazy dog in release 5.10 of 2025",
		"<!DOCTYPE html><p>an entirely different <b>document</b> about databases and near duplicates</p>",
	}
	latest, err := simhash.New(simhash.Options{Pipeline: simhash.LatestPipeline})
	require.NoError(t, err)
	old, err := simhash.New(simhash.Options{Pipeline: simhash.PipelineV2})
	require.NoError(t, err)
	var fps, fpsOld []uint64
	var jl []string
	for i, tx := range texts {
		fp, err := latest.Document(strings.NewReader(tx), simhash.ReadAuto)
		require.NoError(t, err)
		fps = append(fps, fp)
		fp, err = old.Document(strings.NewReader(tx), simhash.ReadAuto)
		require.NoError(t, err)
		fpsOld = append(fpsOld, fp)
		jl = append(jl, fmt.Sprintf(`{"id":%d,"text":%q}`, i+1, tx))
		require.NoError(t, os.WriteFile(filepath.Join(dir, fmt.Sprintf("doc%d.txt", i)), []byte(tx), 0o644))
	}
	require.NotEqual(t, oraclePairs(fps, 3), oraclePairs(fpsOld, 3), "the pipelines differ on these texts")
	require.NoError(t, os.WriteFile(filepath.Join(dir, "doc8.txt"), []byte("\x7fELF\x02\x01\x00\x00"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "doc9.txt"), nil, 0o644))
	jl = append(jl, `{"id":9}`, `{not json`)
	writeTestFile(t, filepath.Join(dir, "docs.jsonl"), jl)
	ctx := context.Background()
	out := filepath.Join(dir, "from-jsonl")
	rep, err := FindAll(ctx, Config{Input: filepath.Join(dir, "docs.jsonl"), Format: neardup.FormatJSONLines, Output: out, Distance: 3})
	require.NoError(t, err)
	sameLines(t, oraclePairs(fps, 3), readLines(t, out))
	assert.EqualValues(t, 2, rep.BadLines())
	out = filepath.Join(dir, "from-files")
	rep, err = FindAll(ctx, Config{Input: filepath.Join(dir, "doc*.txt"), Format: neardup.FormatFiles, Output: out, Distance: 3, Pipeline: "v2"})
	require.NoError(t, err)
	sameLines(t, oraclePairs(fpsOld, 3), readLines(t, out))
	assert.EqualValues(t, 2, rep.BadLines(), "the binary and the empty file")
	bad := readLines(t, out+".bad")
	assert.True(t, slices.ContainsFunc(bad, func(s string) bool { return strings.Contains(s, "doc8.txt: binary content") }), "%q", bad)
	_, err = FindAll(ctx, Config{Input: filepath.Join(dir, "doc*.txt"), Format: neardup.FormatFiles, Output: out, Distance: 3, Pipeline: "v9"})
	assert.ErrorIs(t, err, ErrUsage)
}

func TestBuild(t *testing.T) {
	ds := datasets()[1]
	dir := t.TempDir()
	in := filepath.Join(dir, "fps.txt")
	writeTestFile(t, in, decimalLines(ds.fps))
	out := filepath.Join(dir, "tables")
	rep, err := Build(context.Background(), Config{Input: in, Output: out, Distance: 3})
	require.NoError(t, err)
	b, err := os.ReadFile(out + "-design")
	require.NoError(t, err)
	var d permutation.Design
	require.NoError(t, d.UnmarshalBinary(b))
	want := slices.Clone(ds.fps)
	slices.Sort(want)
	want = slices.Compact(want)
	require.Len(t, rep.Tables, len(d.Tables))
	for ti := range d.Tables {
		files, _ := filepath.Glob(fmt.Sprintf("%s-t%03d-*.blocks", out, ti))
		require.NotEmpty(t, files)
		var got []uint64
		var size int64
		for _, f := range files {
			fd, err := os.Open(f)
			require.NoError(t, err)
			st, _ := fd.Stat()
			size += st.Size()
			r, err := codec.NewStreamReader(fd)
			require.NoError(t, err, f)
			var block []uint64
			for {
				block, err = r.Next(block)
				if err == io.EOF {
					break
				}
				require.NoError(t, err, f)
				for _, pv := range block {
					got = append(got, d.Tables[ti].Unpermute(pv))
				}
			}
			fd.Close()
		}
		slices.Sort(got)
		assert.Equal(t, want, got, "table %d holds every distinct fingerprint once", ti)
		tr := rep.Tables[ti]
		assert.Equal(t, int64(len(want)), tr.Fingerprints)
		assert.Equal(t, size, tr.Bytes, "table %d's reported bytes are its files'", ti)
		assert.InDelta(t, codec.Bound(len(want)), tr.Bound, 1e-9)
		t.Logf("table %d: %.2f bits per fingerprint, bound %.2f", ti, tr.BitsPerFP, tr.Bound)
	}
}

// sameLines asserts that two sorted line lists are equal, naming at most a
// few lines each lacks rather than printing both.
func sameLines(t *testing.T, want, got []string, msgAndArgs ...any) {
	t.Helper()
	if slices.Equal(want, got) {
		return
	}
	w, g := map[string]bool{}, map[string]bool{}
	for _, l := range want {
		w[l] = true
	}
	for _, l := range got {
		g[l] = true
	}
	var missing, extra []string
	for _, l := range want {
		if !g[l] && len(missing) < 3 {
			missing = append(missing, trim(l))
		}
	}
	for _, l := range got {
		if !w[l] && len(extra) < 3 {
			extra = append(extra, trim(l))
		}
	}
	assert.Fail(t, fmt.Sprintf("%d lines, want %d; missing %q; extra %q", len(got), len(want), missing, extra), msgAndArgs...)
}

func trim(s string) string {
	if len(s) > 200 {
		return s[:200] + "..."
	}
	return s
}

// TestUsageErrors: bad settings are usage errors naming the problem, never
// a panic while the pipeline is built.
func TestUsageErrors(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "fps.txt")
	writeTestFile(t, in, []string{"1", "3"})
	out := filepath.Join(dir, "out")
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		run  func() error
		want string
	}{
		{"unknown output file system", func() error { _, err := FindAll(ctx, Config{Input: in, Output: "foo://b/x", Distance: 1}); return err }, `scheme "foo"`},
		{"unknown stored file system", func() error {
			_, err := Batch(ctx, Config{Input: in, Stored: "foo://b/s", Output: out, Distance: 1})
			return err
		}, `scheme "foo"`},
		{"no output", func() error { _, err := FindAll(ctx, Config{Input: in, Distance: 1}); return err }, "--output"},
		{"distance", func() error { _, err := FindClusters(ctx, Config{Input: in, Output: out, Distance: 17}); return err }, "--distance 17"},
		{"format", func() error { _, err := Build(ctx, Config{Input: in, Output: out, Format: "xml"}); return err }, `--format "xml"`},
		{"block size", func() error { _, err := Build(ctx, Config{Input: in, Output: out, BlockSize: 10}); return err }, "block size"},
	} {
		err := tc.run()
		require.ErrorIs(t, err, ErrUsage, tc.name)
		assert.Contains(t, err.Error(), tc.want, tc.name)
	}
	_, err := FindAll(ctx, Config{Input: filepath.Join(dir, "missing-*.txt"), Output: out, Distance: 1})
	assert.ErrorContains(t, err, "no such file")
}
