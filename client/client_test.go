package client_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"math/bits"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"connectrpc.com/connect"
	"github.com/simhashdb/simhashdb/client"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/stretchr/testify/require"
)

var ctx = context.Background()

// binary is the simhashdb command, built once for the tests.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "simhashdb-client-test")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "simhashdb")
	if out, err := exec.Command("go", "build", "-o", binary, "github.com/simhashdb/simhashdb/tools/simhashdb").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "building simhashdb: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// served is a running `simhashdb serve`.
type served struct {
	t    *testing.T
	cmd  *exec.Cmd
	url  string
	args []string
}

// freeAddr returns a loopback address no one listens on now.
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().String()
}

// serve starts the command on addr and waits until it says it listens.
func serve(t *testing.T, addr string, args ...string) *served {
	s := &served{t: t, args: append([]string{"serve", "--addr", addr, "--sync", "always"}, args...)}
	require.NoError(t, s.start())
	t.Cleanup(s.kill)
	return s
}

func (s *served) start() error {
	s.cmd = exec.Command(binary, s.args...)
	pipe, err := s.cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := s.cmd.Start(); err != nil {
		return err
	}
	re := regexp.MustCompile(`listening on (https?://\S+)`)
	sc := bufio.NewScanner(pipe)
	var said []string
	for sc.Scan() {
		said = append(said, sc.Text())
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			s.url = m[1]
			go func() {
				for sc.Scan() {
				}
			}()
			return nil
		}
	}
	return fmt.Errorf("serve exited before listening: %q", said)
}

func (s *served) kill() {
	if s.cmd.Process != nil {
		s.cmd.Process.Kill()
		s.cmd.Wait()
	}
}

// docs are n documents with fingerprints clustered around a few centres,
// so that queries and pairs find neighbours at every distance.
func docs(n int, seed uint64) []engine.Doc {
	r := rand.New(rand.NewPCG(seed, seed))
	centres := []uint64{0, ^uint64(0), r.Uint64(), r.Uint64()}
	out := make([]engine.Doc, n)
	for i := range out {
		fp := centres[r.IntN(len(centres))]
		for range r.IntN(5) {
			fp ^= 1 << r.IntN(64)
		}
		out[i] = engine.Doc{ID: uint64(i + 1), Fingerprint: fp, Name: "doc " + strconv.Itoa(i+1)}
	}
	return out
}

// within is the oracle: the documents within k of fp.
func within(ds []engine.Doc, fp uint64, k int) []uint64 {
	var ids []uint64
	for _, d := range ds {
		if bits.OnesCount64(d.Fingerprint^fp) <= k {
			ids = append(ids, d.ID)
		}
	}
	slices.Sort(ids)
	return ids
}

func TestClientAgainstServe(t *testing.T) {
	s := serve(t, freeAddr(t), "--db", t.TempDir(), "--k", "3")
	c, err := client.New(s.url, client.Options{BatchLines: 97})
	require.NoError(t, err)
	all := docs(1000, 1)
	require.NoError(t, c.InsertBatch(ctx, all[:900]))
	for _, d := range all[900:] {
		require.NoError(t, c.Insert(ctx, d))
	}
	got, err := c.Get(ctx, 5)
	require.NoError(t, err)
	require.Equal(t, all[4], got)
	for _, d := range all[:50] {
		for k := range 4 {
			ms, err := c.Query(ctx, d.Fingerprint, k)
			require.NoError(t, err)
			var ids []uint64
			for i, m := range ms {
				require.Equal(t, bits.OnesCount64(m.Fingerprint^d.Fingerprint), m.Distance)
				require.Equal(t, all[m.ID-1], m.Doc)
				if i > 0 {
					require.LessOrEqual(t, ms[i-1].Distance, m.Distance, "nearest first")
				}
				ids = append(ids, m.ID)
			}
			slices.Sort(ids)
			require.Equal(t, within(all, d.Fingerprint, k), ids, "k = %d", k)
		}
	}
	var qs []uint64
	for _, d := range all[:300] {
		qs = append(qs, d.Fingerprint^1)
	}
	n := 0
	for r, err := range c.QueryBatch(ctx, qs, 2) {
		require.NoError(t, err)
		require.Equal(t, n, r.Index)
		require.Equal(t, qs[n], r.Query)
		want, err := c.Query(ctx, qs[n], 2)
		require.NoError(t, err)
		require.Equal(t, want, r.Matches, "query %d", n)
		n++
	}
	require.Equal(t, len(qs), n, "every query answered, across requests of 97")
	for r, err := range c.QueryBatch(ctx, qs, 2) { // a loop that stops early lets the next request go
		require.NoError(t, err)
		if r.Index == 150 {
			break
		}
	}

	require.NoError(t, c.Delete(ctx, 5, 123456789))
	_, err = c.Get(ctx, 5)
	require.ErrorIs(t, err, engine.ErrNotFound)
	all = slices.Delete(all, 4, 5)

	var exported []engine.Doc
	for d, err := range c.Docs(ctx) {
		require.NoError(t, err)
		exported = append(exported, d)
	}
	require.Equal(t, all, exported)
	pairs := 0
	for p, err := range c.FindAll(ctx, 2) {
		require.NoError(t, err)
		require.LessOrEqual(t, bits.OnesCount64(p.A.Fingerprint^p.B.Fingerprint), 2)
		pairs++
	}
	want := 0
	for i := range all {
		for j := i + 1; j < len(all); j++ {
			if bits.OnesCount64(all[i].Fingerprint^all[j].Fingerprint) <= 2 {
				want++
			}
		}
	}
	require.Equal(t, want, pairs)

	dups, inserted, err := c.InsertIfNew(ctx, engine.Doc{ID: 5000, Fingerprint: all[0].Fingerprint ^ 1}, 1)
	require.NoError(t, err)
	require.False(t, inserted)
	require.NotEmpty(t, dups)
	_, inserted, err = c.InsertIfNew(ctx, engine.Doc{ID: 5001, Fingerprint: 0x5555_5555_5555_5555}, 3)
	require.NoError(t, err)
	require.True(t, inserted)

	st, err := c.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, len(all)+1, st.Documents)

	_, err = c.Query(ctx, 0, 9)
	require.ErrorIs(t, err, engine.ErrDistance, "k above the index's K")
	var ce *client.Error
	require.ErrorAs(t, err, &ce)
	require.Equal(t, connect.CodeInvalidArgument, ce.Code)
	require.Equal(t, "Query", ce.Procedure)
	require.Contains(t, ce.Error(), "the index answers distances 0 to")

	// Settings, as engine.DB.Meta and SetMeta; one kept is not changed.
	_, err = c.Meta(ctx, "app.setting")
	require.ErrorIs(t, err, engine.ErrNotFound)
	require.NoError(t, c.SetMeta(ctx, "app.setting", []byte("v1")))
	v, err := c.Meta(ctx, "app.setting")
	require.NoError(t, err)
	require.Equal(t, "v1", string(v))
	require.ErrorIs(t, c.SetMeta(ctx, "app.setting", []byte("v2")), engine.ErrInput)
}

// TestClientInsertIfNewSimilar: in an index of text, the near-duplicate
// that keeps a document out is one whose sketch reaches the similarity,
// read here with the options the served index keeps.
func TestClientInsertIfNewSimilar(t *testing.T) {
	s := serve(t, freeAddr(t), "--db", t.TempDir(), "--sketches")
	c, err := client.New(s.url, client.Options{})
	require.NoError(t, err)
	sc, err := c.TextSchema(ctx)
	require.NoError(t, err)
	require.NotNil(t, sc)
	st, err := c.Stats(ctx)
	require.NoError(t, err)
	rd, err := sc.ReaderFor(st.SketchSize)
	require.NoError(t, err)
	doc := func(id uint64, text string) engine.Doc {
		fp, sk, err := rd.Read(strings.NewReader(text))
		require.NoError(t, err)
		require.NotEmpty(t, sk)
		return engine.Doc{ID: id, Fingerprint: fp, Sketch: sk}
	}
	text := "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen"
	dups, inserted, err := c.InsertIfNewSimilar(ctx, doc(1, text), 6, 0.9)
	require.NoError(t, err)
	require.True(t, inserted)
	require.Empty(t, dups)
	dups, inserted, err = c.InsertIfNewSimilar(ctx, doc(2, text), 6, 0.9)
	require.NoError(t, err)
	require.False(t, inserted)
	require.Len(t, dups, 1)
	require.EqualValues(t, 1, dups[0].ID)
	require.InDelta(t, 1.0, dups[0].Similarity, 1e-9)
	_, inserted, err = c.InsertIfNewSimilar(ctx, doc(3, "entirely other words about rivers mountains valleys and the sea at dusk"), 6, 0.9)
	require.NoError(t, err)
	require.True(t, inserted)
	_, err = c.Get(ctx, 2)
	require.ErrorIs(t, err, engine.ErrNotFound)
}

func TestClientToken(t *testing.T) {
	dir := t.TempDir()
	tok := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tok, []byte("s3cret\n"), 0o600))
	s := serve(t, freeAddr(t), "--db", filepath.Join(dir, "idx"), "--token-file", tok)
	for _, tc := range []struct {
		token string
		ok    bool
	}{{"", false}, {"wrong", false}, {"s3cret", true}} {
		c, err := client.New(s.url, client.Options{Token: tc.token})
		require.NoError(t, err)
		err = c.Insert(ctx, engine.Doc{ID: 1, Fingerprint: 7})
		if tc.ok {
			require.NoError(t, err)
		} else {
			require.ErrorIs(t, err, client.ErrUnauthorized, "token %q", tc.token)
		}
	}
}

// killingTransport kills and restarts the server before the request
// numbered at: the client meets a refused connection and retries.
type killingTransport struct {
	base     http.RoundTripper
	n        atomic.Int64
	at       int64
	s        *served
	restarts sync.WaitGroup
	err      error // the restart's
}

func (k *killingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if k.n.Add(1) == k.at {
		k.s.kill()
		k.restarts.Add(1)
		go func() {
			defer k.restarts.Done()
			k.err = k.s.start() // the same address and index: the client's retries find it
		}()
	}
	return k.base.RoundTrip(r)
}

// TestClientServerRestarted kills the server in the middle of a batch of
// many requests and starts it again: the retried batch ends with every
// document stored.
func TestClientServerRestarted(t *testing.T) {
	addr := freeAddr(t)
	s := serve(t, addr, "--db", t.TempDir())
	kt := &killingTransport{base: http.DefaultTransport, at: 5, s: s}
	t.Cleanup(kt.restarts.Wait) // before serve's, which kills the server the restart starts
	c, err := client.New(s.url, client.Options{BatchLines: 100, Retries: 12, Backoff: 20 * time.Millisecond, HTTPClient: &http.Client{Transport: kt}})
	require.NoError(t, err)
	all := docs(1000, 2)
	require.NoError(t, c.InsertBatch(ctx, all))
	kt.restarts.Wait()
	require.NoError(t, kt.err)
	require.Greater(t, kt.n.Load(), int64(10), "the batch went on after the restart")
	n := 0
	for d, err := range c.Docs(ctx) {
		require.NoError(t, err)
		require.Equal(t, all[n], d)
		n++
	}
	require.Equal(t, len(all), n)
}

func TestClientNoServer(t *testing.T) {
	c, err := client.New("http://"+freeAddr(t), client.Options{Retries: 2, Backoff: time.Millisecond})
	require.NoError(t, err)
	_, err = c.Get(ctx, 1)
	require.Error(t, err)
	require.False(t, errors.Is(err, engine.ErrNotFound))
	for _, tc := range []struct {
		url  string
		o    client.Options
		want string
	}{
		{"localhost:7700", client.Options{}, "want http://HOST:PORT"},
		{"ftp://h:1", client.Options{}, "want http://HOST:PORT"},
		{"http://h:1", client.Options{Timeout: -time.Second}, "Options.Timeout -1s"},
		{"http://h:1", client.Options{Backoff: -time.Second}, "Options.Backoff -1s"},
		{"http://h:1", client.Options{BatchLines: -1}, "Options.BatchLines -1"},
	} {
		_, err = client.New(tc.url, tc.o)
		require.ErrorContains(t, err, tc.want)
	}
}
