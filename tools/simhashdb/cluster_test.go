package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math/bits"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/internal/natstest"
)

// cluster is "simhashdb serve" nodes of one index whose log is a stream
// kept by three NATS servers, all real processes on loopback: shards of
// perShard nodes each (one shard: the stream is one index's; more: they
// share it, --shard). Node i is of shard i/perShard.
type cluster struct {
	t                *testing.T
	nats             []*natstest.Server
	shards, perShard int
	args             [][]string // each node's serve arguments
	mu               sync.RWMutex
	nodes            []*served
}

func startCluster(t *testing.T, shards, perShard int) *cluster {
	ns := natstest.Start(t, 3)
	c := &cluster{t: t, nats: ns, shards: shards, perShard: perShard}
	for i := range shards * perShard {
		args := []string{"--db", filepath.Join(t.TempDir(), fmt.Sprint("node", i)),
			"--nats", natstest.URLs(ns), "--stream", "cluster", "--stream-replicas", "3", "--sync", "none"}
		if shards > 1 {
			args = append(args, "--shard", fmt.Sprintf("%d/%d", i/perShard, shards))
		}
		c.args = append(c.args, args)
		c.nodes = append(c.nodes, startServe(t, args...))
	}
	return c
}

// url is node i's address now (a restarted node listens elsewhere).
func (c *cluster) url(i int) string {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.nodes[i].url
}

// nodeOf is a node, the r-th of its shard's, of the shard that holds id.
func (c *cluster) nodeOf(id uint64, r int) int {
	return api.ShardOf(id, c.shards)*c.perShard + r%c.perShard
}

// shardOf is the shard of node i.
func (c *cluster) shardOf(i int) int { return i / c.perShard }

// kill kills node i with SIGKILL and starts it again on its index or,
// replaced, on a new one that starts from a snapshot of another node of
// its shard.
func (c *cluster) kill(i int, replace bool) {
	c.mu.Lock()
	old := c.nodes[i]
	c.mu.Unlock()
	require.NoError(c.t, old.cmd.Process.Signal(syscall.SIGKILL))
	<-old.done
	_ = old.cmd.Wait()
	args := c.args[i]
	if replace {
		require.NoError(c.t, os.RemoveAll(args[1])) // --db
		peer := c.shardOf(i)*c.perShard + (i+1)%c.perShard
		args = append(slices.Clip(args), "--snapshot-from", c.url(peer))
	}
	s := startServe(c.t, args...)
	if replace {
		require.Contains(c.t, s.log(), "started from the snapshot")
	}
	c.mu.Lock()
	c.nodes[i] = s
	c.mu.Unlock()
}

// clusterClient gives up on a node quickly: a killed node's requests fail
// and the writer goes on with another.
var clusterClient = &http.Client{Timeout: 20 * time.Second}

func clusterDo(method, url, body string) (int, string, error) {
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		return 0, "", err
	}
	resp, err := clusterClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// clusterModel is what the writers were told.
type clusterModel struct {
	mu       sync.Mutex
	acked    map[uint64]uint64 // id: fingerprint, acknowledged
	maybe    map[uint64]uint64 // sent, answer lost (stored or not)
	inserted map[uint64]bool   // insert-if-new said inserted
	groups   atomic.Int64      // the groups offered so far: 0 to groups-1
}

// groupFP is the fingerprint of group g, whose near-duplicates (within 1)
// insert-if-new offers: each round brings fresh groups to race on.
func groupFP(g int64) uint64 {
	z := uint64(g)*0x9e3779b97f4a7c15 + 1
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// TestClusterKills runs writers and racing crawlers against three nodes
// while nodes are killed with SIGKILL and started again (and, every fifth
// round, a NATS server; every tenth, the node is replaced by a new one
// that starts from another's snapshot): after each round every node holds every
// acknowledged write, the same documents, no two documents that
// insert-if-new forbade, and queries equal a brute-force oracle.
// SIMHASHDB_CLUSTER_ROUNDS sets the kills (CI runs 200).
func TestClusterKills(t *testing.T) {
	clusterKills(t, 1, 3, "SIMHASHDB_CLUSTER_ROUNDS")
}

// TestShardKills is TestClusterKills over two shards of two nodes that
// share the log: each shard's nodes hold its documents, and the crawlers'
// offers, whose ids place them on either shard, are decided over both.
// SIMHASHDB_SHARD_ROUNDS sets the kills.
func TestShardKills(t *testing.T) {
	clusterKills(t, 2, 2, "SIMHASHDB_SHARD_ROUNDS")
}

func clusterKills(t *testing.T, shards, perShard int, roundsVar string) {
	if testing.Short() {
		t.Skip("runs NATS and serve processes")
	}
	rounds := 4
	if n, err := strconv.Atoi(os.Getenv(roundsVar)); err == nil && n > 0 {
		rounds = n
	}
	c := startCluster(t, shards, perShard)
	nodes := shards * perShard
	rng := rand.New(rand.NewPCG(52, 52))
	m := &clusterModel{acked: map[uint64]uint64{}, maybe: map[uint64]uint64{}, inserted: map[uint64]bool{}}
	const groupsPerRound = 4
	m.groups.Store(groupsPerRound)
	var nextID atomic.Uint64
	var acks atomic.Int64
	var pause sync.RWMutex // the checker stops the writers
	stop := make(chan struct{})
	var wg sync.WaitGroup
	ofShards := ""
	if shards > 1 {
		ofShards = fmt.Sprintf(`,"shards":%d`, shards)
	}
	for w := range 6 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := rand.New(rand.NewPCG(uint64(w), 7))
			for {
				select {
				case <-stop:
					return
				default:
				}
				pause.RLock()
				id := nextID.Add(1)
				node := c.url(c.nodeOf(id, r.IntN(perShard)))
				answered := false
				if w < 2 {
					fp := r.Uint64()
					code, _, err := clusterDo("PUT", fmt.Sprintf("%s/v1/documents/%d", node, id), fmt.Sprintf(`{"fingerprint":"%#x"}`, fp))
					answered = err == nil && code == 200
					m.record(id, fp, answered, errors.Is(err, syscall.ECONNREFUSED), false)
				} else {
					fp := groupFP(m.groups.Load()-1-int64(r.IntN(groupsPerRound))) ^ 1<<r.IntN(64)
					code, body, err := clusterDo("POST", node+"/v1/insert-if-new", fmt.Sprintf(`{"id":%d,"fingerprint":"%#x","k":3%s}`, id, fp, ofShards))
					var a struct{ Inserted bool }
					answered = err == nil && code == 200 && json.Unmarshal([]byte(body), &a) == nil
					m.record(id, fp, answered && a.Inserted, answered && !a.Inserted || errors.Is(err, syscall.ECONNREFUSED), true)
				}
				if answered {
					acks.Add(1)
				}
				pause.RUnlock()
			}
		}()
	}
	kills, natsKills, replaced := 0, 0, 0
	for round := range rounds {
		// Let writes run against the cluster as it is, then kill.
		waitFor(t, "writes before a kill", func() (bool, error) { return acks.Load() >= int64(20*(round+1)), nil })
		if round%5 == 4 {
			s := c.nats[rng.IntN(3)]
			s.Kill()
			natsKills++
			s.Restart(t)
		}
		c.kill(rng.IntN(nodes), round%10 == 9)
		kills++
		if round%10 == 9 {
			replaced++
		}
		pause.Lock()
		m.check(t, c, round)
		m.groups.Add(groupsPerRound)
		pause.Unlock()
	}
	close(stop)
	wg.Wait()
	m.check(t, c, rounds)
	// The command line against the cluster: each shard's nodes comma
	// separated, the first one dead.
	c.nodes[0].cmd.Process.Kill()
	<-c.nodes[0].done
	var q uint64
	for id := range m.inserted {
		q = m.acked[id]
		break
	}
	args := []string{"query", "--fp", fmt.Sprintf("%#x", q), "--k", "3", "--json"}
	for s := range shards {
		var urls []string
		for r := range perShard {
			urls = append(urls, c.url(s*perShard+r))
		}
		args = append(args, "--server", strings.Join(urls, ","))
	}
	r := runCLI(t, "", args...)
	require.Equal(t, 0, r.code, r.stderr)
	var want []string
	for id, fp := range m.acked {
		if bits.OnesCount64(fp^q) <= 3 {
			want = append(want, fmt.Sprintf(`"id":%d`, id))
		}
	}
	require.NotEmpty(t, want)
	for _, w := range want {
		assert.Contains(t, r.stdout, w)
	}
	t.Logf("cluster kills (%d shards of %d nodes): %d node kills (%d replaced by a new node from a snapshot), %d NATS server kills, %d acknowledged writes, %d answers lost with their node (stored or not, each checked), %d inserted by insert-if-new", shards, perShard, kills, replaced, natsKills, len(m.acked), len(m.maybe), len(m.inserted))
}

// record notes a write's answer: acknowledged (stored), refused
// (insert-if-new found a near-duplicate, or the node was not listening:
// not stored), or neither (lost with its node: either).
func (m *clusterModel) record(id, fp uint64, acked, refused, ifNew bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case acked:
		m.acked[id] = fp
		if ifNew {
			m.inserted[id] = true
		}
	case !refused:
		m.maybe[id] = fp
	}
}

// check compares every node, caught up with the stream, with the model:
// each holds its shard's part of it, as the other nodes of its shard do.
func (m *clusterModel) check(t *testing.T, c *cluster, round int) {
	t.Helper()
	all := map[uint64]uint64{}  // every shard's documents
	var first map[uint64]uint64 // those of the shard's first node
	for i := range c.shards * c.perShard {
		shard := c.shardOf(i)
		docs := exportOf(t, c.url(i))
		m.mu.Lock()
		for id, fp := range m.acked {
			if api.ShardOf(id, c.shards) != shard {
				continue
			}
			got, ok := docs[id]
			require.True(t, ok, "round %d node %d: acknowledged document %d missing", round, i, id)
			require.Equal(t, fp, got, "round %d node %d: document %d", round, i, id)
		}
		for id, fp := range docs {
			want, ok := m.acked[id]
			if !ok {
				want, ok = m.maybe[id]
			}
			require.True(t, ok, "round %d node %d: document %d was refused or never sent", round, i, id)
			require.Equal(t, want, fp, "round %d node %d: document %d", round, i, id)
			require.Equal(t, shard, api.ShardOf(id, c.shards), "round %d node %d: document %d of another shard", round, i, id)
		}
		m.mu.Unlock()
		if i%c.perShard == 0 {
			first = docs
			maps.Copy(all, docs)
		} else {
			require.Equal(t, first, docs, "round %d: node %d holds other documents than node %d of its shard", round, i, shard*c.perShard)
		}
	}
	// No two documents of one group (all within 2 of each other) stored,
	// on any shard: insert-if-new forbade the second.
	for g := range m.groups.Load() {
		o := groupFP(g)
		var in []uint64
		for id, fp := range all {
			if bits.OnesCount64(fp^o) <= 1 {
				in = append(in, id)
			}
		}
		require.LessOrEqual(t, len(in), 1, "round %d: group %d holds near-duplicates %v", round, g, in)
	}
	// Queries against the oracle, on a node picked by round: its shard's
	// documents.
	node := round % (c.shards * c.perShard)
	url := c.url(node)
	for g := range min(m.groups.Load(), 16) {
		o := groupFP(m.groups.Load() - 1 - g)
		code, body, err := clusterDo("GET", fmt.Sprintf("%s/v1/query?fp=%#x&k=3", url, o), "")
		require.NoError(t, err)
		require.Equal(t, 200, code, body)
		var a struct {
			Matches []struct {
				ID uint64 `json:"id"`
			} `json:"matches"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &a))
		var got, want []uint64
		for _, x := range a.Matches {
			got = append(got, x.ID)
		}
		for id, fp := range all {
			if bits.OnesCount64(fp^o) <= 3 && api.ShardOf(id, c.shards) == c.shardOf(node) {
				want = append(want, id)
			}
		}
		assert.ElementsMatch(t, want, got, "round %d: query %#x", round, o)
	}
}

// TestClusterSnapshot: a new node starts from a peer's snapshot and
// applies the stream after it, even when the stream no longer holds the
// commands before (purged); a new node without one cannot, and says so.
func TestClusterSnapshot(t *testing.T) {
	if testing.Short() {
		t.Skip("runs NATS and serve processes")
	}
	ns := natstest.Start(t, 3)
	args := func(dir string, more ...string) []string {
		return append([]string{"--db", dir, "--nats", natstest.URLs(ns), "--stream", "snap", "--stream-replicas", "3", "--sync", "none"}, more...)
	}
	a := startServe(t, args(filepath.Join(t.TempDir(), "a"))...)
	b := startServe(t, args(filepath.Join(t.TempDir(), "b"))...)
	put := func(from, to int) {
		for id := from; id < to; id++ {
			url := []string{a.url, b.url}[id%2]
			code, body, err := clusterDo("PUT", fmt.Sprintf("%s/v1/documents/%d", url, id), fmt.Sprintf(`{"fingerprint":"%#x"}`, groupFP(int64(id))))
			require.NoError(t, err)
			require.Equal(t, 200, code, body)
		}
	}
	put(1, 301)
	applied := nodeApplied(t, a.url)
	require.Equal(t, uint64(300), applied)

	// The stream forgets what both nodes hold.
	nc, err := nats.Connect(natstest.URLs(ns))
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	stream, err := js.Stream(context.Background(), "snap")
	require.NoError(t, err)
	require.NoError(t, stream.Purge(context.Background(), jetstream.WithPurgeSequence(applied+1)))
	put(301, 351)

	dir := filepath.Join(t.TempDir(), "c")
	c := startServe(t, args(dir, "--snapshot-from", a.url)...)
	assert.Regexp(t, `started from the snapshot of \S+, at command 3\d\d`, c.log())
	want := exportOf(t, a.url)
	require.Len(t, want, 350)
	assert.Equal(t, want, exportOf(t, c.url))
	put(351, 361)
	assert.Equal(t, exportOf(t, a.url), exportOf(t, c.url))
	code, metrics, err := clusterDo("GET", c.url+"/metrics", "")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	assert.Contains(t, metrics, "\nsimhashdb_applied_position 360\n")
	assert.Contains(t, metrics, "\nsimhashdb_replica_lag_commands ")
	code, metrics, err = clusterDo("GET", a.url+"/metrics", "")
	require.NoError(t, err)
	require.Equal(t, 200, code)
	assert.Contains(t, metrics, "\nsimhashdb_replica_publishes_total 180\n", "the writes of even ids went through a")
	assert.Regexp(t, `\nsimhashdb_replica_publish_seconds_total \d`, metrics)

	// Restarted, it resumes from its own index, not from a snapshot.
	require.NoError(t, c.cmd.Process.Kill())
	<-c.done
	c = startServe(t, args(dir, "--snapshot-from", a.url)...)
	assert.NotContains(t, c.log(), "started from the snapshot")
	assert.Equal(t, exportOf(t, a.url), exportOf(t, c.url))

	// Without a snapshot, a new node cannot catch up: the stream lost
	// commands 1 to 300, and a latest read says so.
	d := startServe(t, args(filepath.Join(t.TempDir(), "d"))...)
	code, body, err := clusterDo("GET", d.url+"/v1/query?fp=0&k=0&latest=true", "")
	require.NoError(t, err)
	assert.Equal(t, 503, code)
	assert.Contains(t, body, "holds no commands 1 to 300")
}

// caughtUp returns once the node at url has applied the whole stream: a
// latest query answered, asked again while the node answers 503 (its
// stream's servers restarting, as a client would).
func caughtUp(t *testing.T, url string) {
	waitFor(t, "a latest query of "+url, func() (bool, error) {
		code, body, err := clusterDo("GET", url+"/v1/query?fp=0&k=0&latest=true", "")
		switch {
		case err != nil:
			return false, err
		case code == 503:
			return false, nil
		case code != 200:
			return false, fmt.Errorf("%d %s", code, body)
		}
		return true, nil
	})
}

// nodeApplied is the applied position a node reports, after a latest read.
func nodeApplied(t *testing.T, url string) uint64 {
	caughtUp(t, url)
	code, body, err := clusterDo("GET", url+"/v1/stats", "")
	require.NoError(t, err)
	require.Equal(t, 200, code, body)
	var st struct {
		Applied uint64 `json:"applied"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &st))
	return st.Applied
}

// exportOf is every document of the node at url (id: fingerprint), once
// it caught up with the stream.
func exportOf(t *testing.T, url string) map[uint64]uint64 {
	caughtUp(t, url)
	code, body, err := clusterDo("GET", url+"/v1/export", "")
	require.NoError(t, err)
	require.Equal(t, 200, code, body)
	out := map[uint64]uint64{}
	for line := range strings.Lines(body) {
		var d struct {
			ID uint64 `json:"id"`
			FP string `json:"fp"`
		}
		require.NoError(t, json.Unmarshal([]byte(line), &d), line)
		fp, err := strconv.ParseUint(strings.TrimPrefix(d.FP, "0x"), 16, 64)
		require.NoError(t, err)
		out[d.ID] = fp
	}
	return out
}

// TestSnapshotFromRefuses: serve --snapshot-from leaves a folder of other
// files as it is, and removes what a damaged snapshot wrote, naming why.
func TestSnapshotFromRefuses(t *testing.T) {
	peer := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Simhashdb-Applied", "5")
		io.WriteString(w, strings.Repeat("not a tar ", 200))
	}))
	defer peer.Close()
	serve := func(dir string) result {
		return runCLI(t, "", "serve", "--db", dir, "--addr", "127.0.0.1:0", "--nats", "nats://127.0.0.1:1", "--snapshot-from", peer.URL)
	}

	mine := filepath.Join(t.TempDir(), "mine")
	require.NoError(t, os.MkdirAll(mine, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(mine, "notes.txt"), []byte("mine"), 0o644))
	r := serve(mine)
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, "holds 1 files and no index")
	b, err := os.ReadFile(filepath.Join(mine, "notes.txt"))
	require.NoError(t, err)
	assert.Equal(t, "mine", string(b))

	fresh := filepath.Join(t.TempDir(), "fresh")
	r = serve(fresh)
	assert.Equal(t, exitFailed, r.code)
	assert.Contains(t, r.stderr, "archive: entry 0")
	assert.NoDirExists(t, fresh)

	empty := t.TempDir()
	r = serve(empty)
	assert.Equal(t, exitFailed, r.code)
	names, err := os.ReadDir(empty)
	require.NoError(t, err)
	assert.Empty(t, names, "the user's empty folder stays, empty")
}
