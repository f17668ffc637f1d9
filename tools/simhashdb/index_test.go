package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/simhashdb/simhashdb/internal/lines"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIndexCommands(t *testing.T) {
	db := filepath.Join(t.TempDir(), "idx")
	in := "1 0x0123456789abcdef https://example.com/a b\n" +
		"\n# a comment\n" +
		"2 81985529216486895\n" + // the same fingerprint in decimal
		"3 0x0123456789abcdee\n" + // distance 1
		"4 0x0123456789abcd10\n" + // far
		"x 0x1\n" +
		"5 0xzz\n" +
		"6\n"
	r := runCLI(t, in, "add", "--db", db, "--progress", "json")
	assert.Equal(t, 1, r.code, "bad lines make exit code 1")
	assert.Contains(t, r.stderr, "<stdin>:7: id \"x\"")
	assert.Contains(t, r.stderr, "<stdin>:8: fingerprint")
	assert.Contains(t, r.stderr, "<stdin>:9: want <id> <fingerprint> [name]")
	var last map[string]any
	for _, l := range strings.Split(r.stderr, "\n") {
		if strings.HasPrefix(l, "{") {
			require.NoError(t, json.Unmarshal([]byte(l), &last))
		}
	}
	require.NotNil(t, last, "progress lines: %s", r.stderr)
	assert.EqualValues(t, 7, last["durable"])
	assert.EqualValues(t, 3, last["rejected"])

	t.Run("query", func(t *testing.T) {
		r := runCLI(t, "", "query", "--db", db, "--fp", "0x0123456789abcdef", "--json")
		require.Equal(t, 0, r.code, r.stderr)
		var a lines.Answer
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &a))
		assert.Equal(t, "0x0123456789abcdef", a.Query)
		assert.Equal(t, []lines.Match{
			lines.NewMatch(1, "https://example.com/a b", 0x0123456789abcdef, 0),
			lines.NewMatch(2, "", 0x0123456789abcdef, 0),
			lines.NewMatch(3, "", 0x0123456789abcdee, 1),
		}, a.Matches)
		r = runCLI(t, "", "query", "--db", db, "--k", "0", "--fp", "81985529216486895")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "2 within distance 0")
		assert.Contains(t, r.stdout, "https://example.com/a b")
	})
	t.Run("query errors", func(t *testing.T) {
		for _, c := range []struct {
			args []string
			code int
			msg  string
		}{
			{[]string{"query", "--db", db}, 2, "exactly one of"},
			{[]string{"query", "--db", db, "--fp", "12abc"}, 2, "12abc"},
			{[]string{"query", "--db", db, "--fp", "1", "--k", "9"}, 2, "the index answers distances 0 to 3"},
			{[]string{"query", "--fp", "1"}, 2, "--db DIR is required"},
			{[]string{"stats"}, 2, "--db DIR is required"},
			{[]string{"add", "--db", filepath.Join(t.TempDir(), "new"), "--k", "17"}, 2, "--k 17: want a distance of 0 to 16"},
			{[]string{"query", "--db", filepath.Join(t.TempDir(), "none"), "--fp", "1"}, 1, "no such folder (create an index there with"},
		} {
			r := runCLI(t, "", c.args...)
			assert.Equal(t, c.code, r.code, "%v: %s", c.args, r.stderr)
			assert.Contains(t, r.stderr, c.msg, "%v", c.args)
		}
		r := runCLI(t, "", "query", "--db", db, "--text", "") // no words: no fingerprint to query
		assert.Equal(t, 1, r.code, r.stderr)
		assert.Contains(t, r.stderr, "query: --text: no words to fingerprint")
	})
	t.Run("batch", func(t *testing.T) {
		r := runCLI(t, "0x0123456789abcdef\nq7 0x0123456789abcd10\n42 1\n", "batch", "--db", db, "--k", "1")
		require.Equal(t, 0, r.code, r.stderr)
		lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
		require.Len(t, lines, 3)
		var a []map[string]any
		for _, l := range lines {
			var m map[string]any
			require.NoError(t, json.Unmarshal([]byte(l), &m))
			a = append(a, m)
		}
		assert.EqualValues(t, 1, a[0]["qid"], "line number when no qid")
		assert.Len(t, a[0]["matches"], 3)
		assert.Equal(t, "q7", a[1]["qid"])
		assert.Len(t, a[1]["matches"], 1)
		assert.EqualValues(t, 42, a[2]["qid"])
		assert.Equal(t, "0x0000000000000001", a[2]["query"])
		assert.Empty(t, a[2]["matches"])
		// Bad lines are reported and skipped; blank lines and comments
		// are not bad; the good lines are answered; exit code 1.
		long := strings.Repeat("9", 1000)
		r = runCLI(t, "1\n\n# a comment\n0xfg\n"+long+"\n"+strings.Repeat("x", 70000)+"\n0x0123456789abcdef\n", "batch", "--db", db)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "<stdin>:4: ")
		assert.Contains(t, r.stderr, `"0xfg"`)
		assert.Contains(t, r.stderr, "<stdin>:5: ")
		assert.Contains(t, r.stderr, "(1000 bytes)")
		assert.Less(t, len(r.stderr), 2000, "bad lines are named, not echoed: %s", r.stderr)
		assert.Contains(t, r.stderr, "<stdin>:6: line of 70000 bytes")
		assert.NotContains(t, r.stderr, "<stdin>:2:")
		assert.NotContains(t, r.stderr, "<stdin>:3:")
		lines = strings.Split(strings.TrimSpace(r.stdout), "\n")
		require.Len(t, lines, 2, "the good lines are answered")
		assert.Contains(t, lines[1], `"qid":7`)
		in := filepath.Join(t.TempDir(), "q.txt")
		require.NoError(t, os.WriteFile(in, []byte("1\n0x1 2 3\n"), 0o644))
		r = runCLI(t, "", "batch", "--db", db, "--input", in)
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, in+":2: want <fingerprint>, <qid> <fingerprint>")
	})
	t.Run("stats and check", func(t *testing.T) {
		r := runCLI(t, "", "stats", "--db", db, "--json")
		require.Equal(t, 0, r.code, r.stderr)
		var st map[string]any
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
		for _, f := range []string{"documents", "fingerprints", "tables", "bytes_on_disk", "table_bytes", "bits_per_fingerprint", "entropy_bound_bits"} {
			assert.Contains(t, st, f)
		}
		assert.EqualValues(t, 4, st["documents"])
		assert.EqualValues(t, 3, st["fingerprints"])
		assert.Contains(t, st, "pebble_index_bytes")
		r = runCLI(t, "", "stats", "--db", db)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "documents          4")
		assert.Regexp(t, `pebble index +\d+ bytes of index and filter blocks over the tables; Pebble's share of the cache may grow to \d+ bytes \(a limit, not memory taken\)\n`, r.stdout, "a small index fits")
		assert.NotContains(t, r.stdout, "applied position", "an index no log was applied to")
		assert.NotContains(t, st, "applied")
		r = runCLI(t, "", "check", "--db", db)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, "ok: the tables hold 4 documents")
	})
	t.Run("find-all and clusters over the index", func(t *testing.T) {
		r := runCLI(t, "", "find-all", "--db", db, "-d", "1")
		require.Equal(t, 0, r.code, r.stderr)
		var got []string
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			var p api.Pair
			require.NoError(t, json.Unmarshal([]byte(l), &p), l)
			got = append(got, fmt.Sprintf("%d-%d@%d %q", p.A.ID, p.B.ID, p.Distance, p.A.Name))
		}
		slices.Sort(got)
		assert.Equal(t, []string{`1-2@0 "https://example.com/a b"`, `1-3@1 "https://example.com/a b"`, `2-3@1 ""`}, got)
		assert.Contains(t, r.stdout, `"fp":"0x0123456789abcdee"`)
		r = runCLI(t, "", "find-clusters", "--db", db)
		require.Equal(t, 0, r.code, r.stderr)
		var c api.Cluster
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &c))
		assert.Equal(t, 3, c.Size)
		assert.Equal(t, []api.Doc{{ID: 1, Name: "https://example.com/a b", FP: "0x0123456789abcdef"}, {ID: 2, FP: "0x0123456789abcdef"}, {ID: 3, FP: "0x0123456789abcdee"}}, c.Documents)
		r = runCLI(t, "", "find-all", "--db", db, "-d", "5")
		assert.Equal(t, 2, r.code)
		assert.Contains(t, r.stderr, "the index answers distances 0 to 3")
	})
	t.Run("delete", func(t *testing.T) {
		r := runCLI(t, "", "delete", "--db", db, "2", "99")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, "deleted 1 document; not stored: 99\n", r.stdout)
		r = runCLI(t, "", "query", "--db", db, "--fp", "0x0123456789abcdef", "--json")
		require.Equal(t, 0, r.code, r.stderr)
		var a lines.Answer
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &a))
		assert.Len(t, a.Matches, 2)
		r = runCLI(t, "", "delete", "--db", db, "two")
		assert.Equal(t, 2, r.code)
		assert.Contains(t, r.stderr, `"two"`)
		r = runCLI(t, "", "check", "--db", db)
		require.Equal(t, 0, r.code, r.stderr)
	})
	t.Run("add text", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, "a.txt"), []byte("the quick brown fox jumps over the lazy dog"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "b.txt"), []byte("the quick brown fox jumps over the lazy dog!"), 0o644))
		r := runCLI(t, "", "add", "--db", db, "--text", dir)
		require.Equal(t, 0, r.code, r.stderr)
		fp := simhash.Format(simhash.Default().Text("the quick brown fox jumps over the lazy dog"))
		out := strings.Split(strings.TrimSpace(r.stdout), "\n")
		require.Len(t, out, 2, r.stdout)
		for i, name := range []string{"a.txt", "b.txt"} {
			assert.True(t, strings.HasSuffix(out[i], "\t"+fp+"\t"+filepath.Join(dir, name)), out[i])
		}
		assert.Contains(t, r.stderr, "2 files: 2 added, 0 replaced, 0 unchanged")
		r = runCLI(t, "", "query", "--db", db, "--text", "the quick brown fox jumps over the lazy dog", "--k", "0")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stdout, filepath.Join(dir, "b.txt"))

		// Again: the same documents, under the same ids; a changed file
		// replaces its document, a new one is added.
		require.NoError(t, os.WriteFile(filepath.Join(dir, "b.txt"), []byte("an entirely different text about something else"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, "c.txt"), []byte("a third file"), 0o644))
		before := runCLI(t, "", "stats", "--db", db, "--json")
		r = runCLI(t, "", "add", "--db", db, "--text", dir)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stderr, "3 files: 1 added, 1 replaced, 1 unchanged")
		after := runCLI(t, "", "stats", "--db", db, "--json")
		var b, a struct{ Documents int }
		require.NoError(t, json.Unmarshal([]byte(before.stdout), &b))
		require.NoError(t, json.Unmarshal([]byte(after.stdout), &a))
		assert.Equal(t, b.Documents+1, a.Documents, "only c.txt is new")
		r = runCLI(t, "", "query", "--db", db, "--text", "the quick brown fox jumps over the lazy dog", "--k", "0")
		require.Equal(t, 0, r.code, r.stderr)
		assert.NotContains(t, r.stdout, filepath.Join(dir, "b.txt"), "b.txt's old text is gone")

		// --if-new: a file near a stored one is reported, not added.
		other := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(other, "copy.txt"), []byte("the quick brown fox jumps over the lazy dog"), 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(other, "new.txt"), []byte("nothing like anything stored so far in this index"), 0o644))
		r = runCLI(t, "", "add", "--db", db, "--if-new", "3", "--text", other)
		require.Equal(t, 0, r.code, r.stderr)
		assert.Contains(t, r.stderr, "copy.txt: not added: within 3 of document")
		assert.Contains(t, r.stderr, "2 files: 1 added, 0 replaced, 0 unchanged, 1 not added as near-duplicates", "the counts say what the index holds")
		assert.Contains(t, r.stdout, "new.txt")
		assert.NotContains(t, r.stdout, "copy.txt")
	})
	t.Run("negative k", func(t *testing.T) {
		for _, args := range [][]string{{"add"}, {"query", "--fp", "1"}, {"batch"}} {
			r := runCLI(t, "1\n", append(args, "--db", db, "--k", "-3")...)
			assert.Equal(t, 2, r.code, args[0])
			assert.Contains(t, r.stderr, "--k -3: want a distance of 0 to 16", args[0])
		}
	})
	t.Run("options fixed at creation", func(t *testing.T) {
		r := runCLI(t, "7 1\n", "add", "--db", db, "--k", "2")
		assert.Equal(t, 1, r.code)
		assert.Contains(t, r.stderr, "K")
	})
}

// TestFindAllMatchesOracle checks find-all and find-clusters without an
// index against brute force, with repeats, 0, all-ones and hex input.
// TestStatsApplied checks that stats shows how far a replica applied its
// log (engine.DB.Apply).
func TestStatsApplied(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "idx")
	db, err := engine.Open(dir, engine.Options{})
	require.NoError(t, err)
	require.NoError(t, db.Apply(context.Background(), engine.Commit{Position: 7, Insert: []engine.Doc{{ID: 1, Fingerprint: 5}}}))
	require.NoError(t, db.Close())
	r := runCLI(t, "", "stats", "--db", dir)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "applied position   7 ")
	r = runCLI(t, "", "stats", "--db", dir, "--json")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, `"applied": 7`)
}

func TestFindAllMatchesOracle(t *testing.T) {
	fps := fingerprints.Planted(3000, 3, 0.2, 9)
	fps = append(fps, fps[10], fps[10], 0, 0x0f)
	var in strings.Builder
	for i, fp := range fps {
		if i%7 == 0 {
			fmt.Fprintf(&in, "0x%x\n", fp)
		} else {
			fmt.Fprintf(&in, "%d\n", fp)
		}
	}
	// The oracle: distinct pairs within 3, and [a, a] for repeats.
	count := map[uint64]int{}
	for _, fp := range fps {
		count[fp]++
	}
	distinct := slices.Sorted(func(yield func(uint64) bool) {
		for v := range count {
			if !yield(v) {
				return
			}
		}
	})
	var want strings.Builder
	for i, a := range distinct {
		if count[a] > 1 {
			fmt.Fprintf(&want, "[%d, %d]\n", a, a)
		}
		for _, b := range distinct[i+1:] {
			if bits.OnesCount64(a^b) <= 3 {
				fmt.Fprintf(&want, "[%d, %d]\n", a, b)
			}
		}
	}
	for _, blocks := range []string{"0", "6", "4"} {
		r := runCLI(t, in.String(), "find-all", "-b", blocks, "-d", "3")
		require.Equal(t, 0, r.code, r.stderr)
		require.Equal(t, want.String(), r.stdout, "blocks %s", blocks)
	}
	// Clusters: every pair's members share a cluster, clusters are
	// disjoint, and each member appears as often as in the input.
	out := filepath.Join(t.TempDir(), "clusters.jsonl")
	r := runCLI(t, in.String(), "find-clusters", "--distance", "3", "--output", out)
	require.Equal(t, 0, r.code, r.stderr)
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	where := map[uint64]int{}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var c []uint64
		require.NoError(t, json.Unmarshal([]byte(line), &c))
		require.True(t, slices.IsSorted(c))
		seen := map[uint64]int{}
		for _, v := range c {
			seen[v]++
		}
		for v, n := range seen {
			_, dup := where[v]
			require.False(t, dup, "%d in two clusters", v)
			where[v] = i
			require.Equal(t, count[v], n, "%d appears as often as in the input", v)
		}
	}
	sc := bufio.NewScanner(strings.NewReader(want.String()))
	for sc.Scan() {
		var p [2]uint64
		require.NoError(t, json.Unmarshal(sc.Bytes(), &p))
		ca, okA := where[p[0]]
		cb, okB := where[p[1]]
		require.True(t, okA && okB && ca == cb, "pair %v in one cluster", p)
	}
}

func TestFindAllErrors(t *testing.T) {
	for _, c := range []struct {
		in   string
		args []string
		code int
		msg  string
	}{
		{"1\n\nxyz 1\n", nil, 1, "<stdin>:3:"},
		{"1\n2\nabc\n", nil, 1, "<stdin>:3:"},
		{"1\n18446744073709551616\n", nil, 1, "<stdin>:2:"},
		{"1\n", []string{"-b", "3"}, 2, "--blocks 3"},
		{"1\n", []string{"-d", "17"}, 2, "--distance 17"},
		{"1\n", []string{"extra"}, 2, "unexpected"},
		{"", []string{"-i", "/nonexistent/fps.txt"}, 1, "/nonexistent/fps.txt"},
	} {
		for _, cmd := range []string{"find-all", "find-clusters"} {
			r := runCLI(t, c.in, append([]string{cmd}, c.args...)...)
			assert.Equal(t, c.code, r.code, "%s %v: %s", cmd, c.args, r.stderr)
			assert.Contains(t, r.stderr, c.msg, "%s %v", cmd, c.args)
			assert.Empty(t, r.stdout, "%s %v: nothing printed", cmd, c.args)
		}
	}
	r := runCLI(t, "", "find-all")
	assert.Equal(t, 0, r.code, "empty input: no pairs")
	assert.Empty(t, r.stdout)
}

// TestFormatsChain: every command that reads fingerprints reads what the
// others write: export's header and records, fingerprint's lines, blank
// lines and comments.
func TestFormatsChain(t *testing.T) {
	db := filepath.Join(t.TempDir(), "idx")
	r := runCLI(t, "1 0x0000000000000001 one\n2 0x0000000000000003 two\n3 0x00000000000000ff\n", "add", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	exported := runCLI(t, "", "export", "--db", db)
	require.Equal(t, 0, exported.code, exported.stderr)
	require.True(t, strings.HasPrefix(exported.stdout, "# simhashdb-export"))
	named := "0x0000000000000001\t/a.txt\n\n# a comment\n0x0000000000000003\t/b.txt\n"
	for _, in := range []string{exported.stdout, named} {
		for _, cmd := range []string{"find-all", "find-clusters"} {
			r := runCLI(t, in, cmd, "-d", "1")
			require.Equal(t, 0, r.code, "%s: %s", cmd, r.stderr)
			assert.Contains(t, r.stdout, "0x0000000000000001", cmd)
			assert.Contains(t, r.stdout, "0x0000000000000003", cmd)
		}
		r := runCLI(t, in, "batch", "--db", db, "--k", "1")
		require.Equal(t, 0, r.code, r.stderr)
		assert.Equal(t, 2+strings.Count(in, "0x00000000000000ff"), strings.Count(r.stdout, "\n"), r.stdout)
		r = runCLI(t, in, "compression")
		require.Equal(t, 0, r.code, r.stderr)
	}
}

// TestAddDurableSurvivesKill runs add on an endless input, kills it with
// SIGKILL after some progress lines, and checks every record the last line
// called durable is in the index.
func TestAddDurableSurvivesKill(t *testing.T) {
	if testing.Short() {
		t.Skip("kills a child process")
	}
	for round := range 3 {
		db := filepath.Join(t.TempDir(), "idx")
		cmd := exec.Command(binary, "add", "--db", db, "--progress", "json", "--sync", "always")
		stdin, err := cmd.StdinPipe()
		require.NoError(t, err)
		stderr, err := cmd.StderrPipe()
		require.NoError(t, err)
		require.NoError(t, cmd.Start())
		go func() {
			r := rand.New(rand.NewPCG(uint64(round), 1))
			w := bufio.NewWriter(stdin)
			for i := 1; ; i++ {
				if _, err := fmt.Fprintf(w, "%d %#x\n", i, r.Uint64()); err != nil {
					return
				}
				if i%500 == 0 {
					if w.Flush() != nil {
						return
					}
					time.Sleep(time.Millisecond)
				}
			}
		}()
		sc := bufio.NewScanner(stderr)
		durable, lines := int64(0), 0
		for sc.Scan() && lines < 3+round {
			var p struct{ Durable int64 }
			if json.Unmarshal(sc.Bytes(), &p) == nil {
				durable = p.Durable
				lines++
			}
		}
		require.NoError(t, cmd.Process.Signal(syscall.SIGKILL))
		cmd.Wait()
		require.Positive(t, durable)
		// Every durable id is found (a read-only open replays the log).
		idx, err := engine.Open(db, engine.Options{ReadOnly: true})
		require.NoError(t, err)
		for id := uint64(1); id <= uint64(durable); id++ {
			_, err := idx.Get(context.Background(), id)
			require.NoError(t, err, "round %d: id %d of %d durable", round, id, durable)
		}
		require.NoError(t, idx.Close())
		r := runCLI(t, "", "check", "--db", db)
		require.Equal(t, 0, r.code, r.stderr)
	}
}

func TestEverySubcommandHasHelp(t *testing.T) {
	for name := range commands {
		r := runCLI(t, "", name, "--help")
		assert.Equal(t, 0, r.code, name)
		assert.Contains(t, r.stderr, "Example:", name)
		assert.Contains(t, r.stderr, "Exit codes:", name)
		assert.Contains(t, r.stderr, "simhashdb "+name, name)
	}
}

// TestIndexFit: stats says when Pebble's share of the cache cannot hold the
// index and filter blocks a cold query goes through, and what cache would.
func TestIndexFit(t *testing.T) {
	for _, tc := range []struct {
		index, share, need int64
		want               string
	}{
		{2 << 20, 8 << 20, 4 << 20, ""},
		{8 << 20, 8 << 20, 14 << 20, ""},
		{21 << 20, 24 << 20, 35 << 20, ""},
		{30 << 20, 24 << 20, 50 << 20, "a cache of 51 MiB would hold them"},
		{49 << 20, 24 << 20, 82 << 20, "a cache of 83 MiB would hold them"},
	} {
		got := indexFit(engine.Stats{CacheSize: 32 << 20, PebbleIndexBytes: tc.index, PebbleCacheSize: tc.share, CacheForIndex: tc.need})
		if tc.want == "" {
			assert.Empty(t, got, "%d in %d", tc.index, tc.share)
		} else {
			assert.Contains(t, got, tc.want)
		}
	}
}

// TestPathSpelling: one file is one document however the command line
// names it: relative, ".", absolute, through a symbolic link.
func TestPathSpelling(t *testing.T) {
	root := t.TempDir()
	docs := filepath.Join(root, "mydocs")
	require.NoError(t, os.Mkdir(docs, 0o755))
	for i, text := range []string{"alpha beta gamma delta", "one two three four five", "red green blue yellow", "north south east west", "spring summer autumn winter"} {
		require.NoError(t, os.WriteFile(filepath.Join(docs, fmt.Sprintf("f%d.txt", i)), []byte(text), 0o644))
	}
	require.NoError(t, os.Symlink(docs, filepath.Join(root, "link")))
	db := filepath.Join(root, "idx")
	for _, c := range []struct{ dir, arg string }{{root, "mydocs"}, {docs, "."}, {"/", docs}, {root, "link"}, {root, "./mydocs/../mydocs/"}} {
		cmd := exec.Command(binary, "add", "--db", db, "--text", c.arg)
		cmd.Dir = c.dir
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	r := runCLI(t, "", "export", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 5, strings.Count(r.stdout, "\n")-1, "5 files, 5 documents: %s", r.stdout) // the export header
	assert.Contains(t, r.stdout, filepath.Join(docs, "f0.txt"), "named by the absolute path")
	r = runCLI(t, "", "find-all", "--db", db, "-d", "0")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Empty(t, r.stdout, "no file paired with itself")
}

// TestPrune: add --text --prune removes the documents of files gone from
// the folders given, and no other; --dry-run lists them and changes
// nothing.
func TestPrune(t *testing.T) {
	root := t.TempDir()
	docs := filepath.Join(root, "docs")
	require.NoError(t, os.Mkdir(docs, 0o755))
	for i, text := range []string{"alpha beta gamma delta", "one two three four five", "red green blue yellow"} {
		require.NoError(t, os.WriteFile(filepath.Join(docs, fmt.Sprintf("f%d.txt", i)), []byte(text), 0o644))
	}
	db := filepath.Join(root, "idx")
	r := runCLI(t, "", "add", "--db", db, "--text", docs)
	require.Equal(t, 0, r.code, r.stderr)
	// Records into an index with sketches carry one (as export writes).
	sk := strings.Repeat("5a", recordSize)
	r = runCLI(t, "7 0x1 "+sk+" "+filepath.Join(root, "elsewhere", "gone.txt")+"\n8 0x2 "+sk+" https://a.example/\n", "add", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	require.NoError(t, os.Remove(filepath.Join(docs, "f1.txt")))
	count := func() int {
		r := runCLI(t, "", "stats", "--db", db, "--json")
		var st struct{ Documents int }
		require.NoError(t, json.Unmarshal([]byte(r.stdout), &st))
		return st.Documents
	}
	r = runCLI(t, "", "add", "--db", db, "--text", docs, "--prune", "--dry-run")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, "would remove\t"+strings.Fields(r.stdout)[2]+"\t"+filepath.Join(docs, "f1.txt")+"\n", r.stdout)
	assert.Equal(t, 5, count(), "a dry run changes nothing")
	r = runCLI(t, "", "add", "--db", db, "--text", docs, "--prune")
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "removed\t")
	assert.Contains(t, r.stderr, "1 documents under "+docs+" whose files are gone: removed")
	assert.Equal(t, 4, count(), "the gone file's document only: a path outside the folder and a URL stay")
	r = runCLI(t, "", "add", "--db", db, "--prune")
	assert.Equal(t, 2, r.code)
	assert.Contains(t, r.stderr, "--prune and --dry-run go with --text")
}

// TestNewlineInFileName: a file whose name holds a line break is one
// output line, its name quoted, and fingerprint's line names the same
// document as add --text.
func TestNewlineInFileName(t *testing.T) {
	root := t.TempDir()
	path := filepath.Join(root, "line\nbreak.txt")
	require.NoError(t, os.WriteFile(path, []byte("words in a file with an odd name"), 0o644))
	db := filepath.Join(root, "idx")
	r := runCLI(t, "", "add", "--db", db, "--sketches=false", "--text", path)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Equal(t, 1, strings.Count(r.stdout, "\n"), r.stdout)
	assert.Contains(t, r.stdout, strconv.Quote(path))
	fp := runCLI(t, "", "fingerprint", path)
	require.Equal(t, 0, fp.code, fp.stderr)
	assert.Equal(t, 1, strings.Count(fp.stdout, "\n"), fp.stdout)
	r = runCLI(t, fp.stdout, "add", "--db", db)
	require.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stderr, "0 added, 0 replaced, 1 unchanged", "the same document")
}
