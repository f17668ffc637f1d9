package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/simhashdb/simhashdb/internal/natstest"
	"github.com/simhashdb/simhashdb/internal/nettest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestServeShards: the commands work against an index split over three
// servers (--server once a shard) as against one index of every
// document: add --text, find-all, find-clusters, query, batch, export,
// stats, check; add --if-new is refused, naming why (the servers share
// no log).
func TestServeShards(t *testing.T) {
	dir := t.TempDir()
	files := nearTexts(t, dir)
	var shards []string
	for i := range 3 {
		s := startServe(t, "--db", filepath.Join(dir, fmt.Sprint("shard", i)), "--sketches")
		t.Cleanup(func() { s.stop(t, syscall.SIGTERM) })
		shards = append(shards, "--server", s.url)
	}
	local := []string{"--db", filepath.Join(dir, "local")}
	run := func(stdin string, args ...string) (served, embedded result) {
		served = runCLI(t, stdin, append(slices.Clone(args), shards...)...)
		require.Equal(t, 0, served.code, "%v: %s", args, served.stderr)
		embedded = runCLI(t, stdin, append(slices.Clone(args), local...)...)
		require.Equal(t, 0, embedded.code, "%v: %s", args, embedded.stderr)
		return served, embedded
	}
	sorted := func(s string) []string {
		lines := strings.Split(strings.TrimSpace(s), "\n")
		slices.Sort(lines)
		return lines
	}

	r, l := run("", "add", "--text", files)
	assert.Equal(t, l.stdout, r.stdout, "the same ids and fingerprints")
	assert.Contains(t, r.stderr, "36 files: 36 added")
	r, l = run("", "find-all")
	assert.Equal(t, sorted(l.stdout), sorted(r.stdout))
	assert.GreaterOrEqual(t, strings.Count(r.stdout, "\n"), 24, "the near copies pair")
	assert.Contains(t, r.stdout, `"similarity":`)
	for _, method := range []string{"components", "star"} {
		r, l = run("", "find-clusters", "--method", method)
		assert.Equal(t, l.stdout, r.stdout, method)
		assert.Contains(t, r.stdout, `{"size":3,`, method)
	}
	r, l = run("", "query", "--file", filepath.Join(files, "t03-1.txt"), "--json")
	assert.Equal(t, l.stdout, r.stdout)
	assert.Contains(t, r.stdout, `"similarity":1`)
	exp, l := run("", "export")
	assert.Equal(t, l.stdout, exp.stdout, "every document, by id, under the index's text options")
	r, l = run(exp.stdout, "batch", "--similarity", "0.8")
	assert.Equal(t, l.stdout, r.stdout)
	r, _ = run("", "stats")
	assert.Regexp(t, `documents +36 `, r.stdout)
	r, _ = run("", "check")
	assert.Contains(t, r.stdout, "ok")

	fresh := filepath.Join(dir, "fresh.txt")
	require.NoError(t, os.WriteFile(fresh, []byte("a text no shard holds yet"), 0o644))
	ifNew := runCLI(t, "", append([]string{"add", "--text", "--if-new", "6", fresh}, shards...)...)
	assert.Equal(t, 1, ifNew.code)
	assert.Contains(t, ifNew.stderr, "not on a sharded index: shard ")
	assert.Contains(t, ifNew.stderr, "the client places documents over 3 shards, and this server holds one index: insert-if-new would decide over this server's documents alone")
	bad := runCLI(t, "", "stats", "--server", "http://127.0.0.1:1", "--server", "nope")
	assert.Equal(t, 2, bad.code)
	assert.Contains(t, bad.stderr, `--server "nope": want http://HOST:PORT`)
	twice := runCLI(t, "", append([]string{"stats"}, append(slices.Clone(shards), "--server", shards[1])...)...)
	assert.Equal(t, 2, twice.code)
	assert.Contains(t, twice.stderr, "is in shard 0 and shard 3")
}

// nearTexts writes twelve texts, each with two near copies, in dir/files.
func nearTexts(t *testing.T, dir string) string {
	files := filepath.Join(dir, "files")
	require.NoError(t, os.MkdirAll(files, 0o755))
	rng := rand.New(rand.NewPCG(52, 5))
	words := strings.Fields("the quick brown fox jumps over a lazy dog while seven wise owls sing of rivers stones and distant hills under pale winter light")
	for i := range 12 {
		text := make([]string, 120)
		for j := range text {
			text[j] = words[rng.IntN(len(words))]
		}
		for v := range 3 {
			if v > 0 {
				text[rng.IntN(len(text))] = words[rng.IntN(len(words))]
			}
			name := filepath.Join(files, fmt.Sprintf("t%02d-%d.txt", i, v))
			require.NoError(t, os.WriteFile(name, []byte(strings.Join(text, " ")), 0o644))
		}
	}
	return files
}

// TestServeShardsIfNew: over three shards of serve nodes sharing one log
// (--nats, --shard I/3), add --if-new decides over every shard, as in
// one index: of each text and its two near copies, whose ids place them
// on any shard, one is added. Fingerprints (--if-new 3) and text verified
// by sketches alike.
func TestServeShardsIfNew(t *testing.T) {
	dir := t.TempDir()
	files := nearTexts(t, dir)
	ns := natstest.Start(t, 1)
	for _, text := range []bool{false, true} {
		name := map[bool]string{false: "fingerprints", true: "text"}[text]
		t.Run(name, func(t *testing.T) {
			var shards []string
			for i := range 3 {
				args := []string{"--db", filepath.Join(dir, name, fmt.Sprint("shard", i)), "--nats", ns[0].URL, "--stream", name, "--shard", fmt.Sprintf("%d/3", i)}
				if text {
					args = append(args, "--sketches")
				}
				s := startServe(t, args...)
				t.Cleanup(func() { s.stop(t, syscall.SIGTERM) })
				assert.Contains(t, s.log(), fmt.Sprintf("a node of stream %s (shard %d/3)", name, i))
				shards = append(shards, "--server", s.url)
			}
			// Fingerprints: twelve, each with two others within 2 bits.
			add, stdin := []string{"add", "--if-new", "3"}, ""
			rng := rand.New(rand.NewPCG(52, 6))
			for g := range 12 {
				fp := rng.Uint64()
				for v := range 3 {
					stdin += fmt.Sprintf("%d %#x g%d-%d\n", rng.Uint64N(1<<40), fp^uint64(v)<<uint(g), g, v)
				}
			}
			if text {
				add, stdin = []string{"add", "--text", "--if-new", "6", files}, ""
			}
			served := runCLI(t, stdin, append(slices.Clone(add), shards...)...)
			require.Equal(t, 0, served.code, served.stderr)
			embedded := runCLI(t, stdin, append(slices.Clone(add), "--db", filepath.Join(dir, name, "local"))...)
			require.Equal(t, 0, embedded.code, embedded.stderr)
			assert.Equal(t, embedded.stdout, served.stdout)
			assert.Regexp(t, "24 (records )?not added as near-duplicates", served.stderr)
			assert.Equal(t, embedded.stderr, served.stderr)
			exp := runCLI(t, "", append([]string{"export", "--json"}, shards...)...)
			local := runCLI(t, "", "export", "--json", "--db", filepath.Join(dir, name, "local"))
			assert.Equal(t, local.stdout, exp.stdout)
			assert.Equal(t, 12, strings.Count(exp.stdout, `"id":`))

			// Through a router in front of the shards, one address: the same
			// offers again are all near-duplicates of those stored, decided
			// over every shard; export and the pairs are the shards'.
			r := startListening(t, binary, "route", shards...)
			t.Cleanup(func() { r.stop(t, syscall.SIGTERM) })
			assert.Contains(t, r.log(), "(3 shards, no token: loopback only)")
			assert.Contains(t, r.log(), "route: 3 shards holding 12 documents")
			direct := runCLI(t, stdin, append(slices.Clone(add), shards...)...)
			require.Equal(t, 0, direct.code, direct.stderr)
			assert.Regexp(t, "(36|24) (records )?not added as near-duplicates", direct.stderr)
			again := runCLI(t, stdin, append(slices.Clone(add), "--server", r.url)...)
			require.Equal(t, 0, again.code, again.stderr)
			assert.Equal(t, direct.stdout, again.stdout)
			assert.Equal(t, direct.stderr, again.stderr)
			routed := runCLI(t, "", "export", "--json", "--server", r.url)
			require.Equal(t, 0, routed.code, routed.stderr)
			assert.Equal(t, exp.stdout, routed.stdout)
			pairs := runCLI(t, "", append([]string{"find-all"}, shards...)...)
			require.Equal(t, 0, pairs.code, pairs.stderr)
			routedPairs := runCLI(t, "", "find-all", "--server", r.url)
			require.Equal(t, 0, routedPairs.code, routedPairs.stderr)
			assert.Equal(t, pairs.stdout, routedPairs.stdout)
		})
	}
}

// TestRouteRefuses: route without shards, with a shard's address twice,
// or listening off loopback without a token is refused before it serves.
func TestRouteRefuses(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{nil, "--server: give each shard"},
		{[]string{"--server", "http://a:7700", "--server", "http://A:7700"}, "A:7700 is in shard 0 and shard 1"},
		{[]string{"--server", "ftp://a"}, `server address "ftp://a"`},
		{[]string{"--server", "http://a:7700", "--addr", "0.0.0.0:7710"}, "without --token-file only a loopback address"},
		{[]string{"--server", "http://a:7700", "--server-token-file", filepath.Join(t.TempDir(), "none")}, "none: no such file"},
	} {
		r := runCLI(t, "", append([]string{"route"}, c.args...)...)
		assert.Equal(t, exitUsage, r.code, "%q: %s", c.args, r.stderr)
		assert.Contains(t, r.stderr, c.want, "%q", c.args)
	}
	// A shard that cannot be reached is warned of; the router serves.
	gone := "http://" + nettest.Refused(t)
	r := startListening(t, binary, "route", "--server", gone)
	assert.Contains(t, r.log(), "route: warning: asking the shards for their statistics")
	r.stop(t, syscall.SIGTERM)
	assert.Contains(t, r.log(), "route: stopped")
}
