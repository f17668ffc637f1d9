package server

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/textindex"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// textServer serves a new index with sketches (package textindex).
func textServer(t *testing.T) *httptest.Server {
	t.Helper()
	db, err := engine.Open(t.TempDir(), textindex.Options(engine.Options{SizeHint: 1 << 10, Sync: engine.SyncNone}))
	require.NoError(t, err)
	f, err := simhash.New(simhash.Options{Shingle: textindex.Shingle})
	require.NoError(t, err)
	ts := httptest.NewServer(New(db, Options{Fingerprinter: f}))
	t.Cleanup(func() {
		ts.Close()
		db.Close()
	})
	return ts
}

// pages returns, with a fixed seed, a page, a near-duplicate of it (one
// word in 200 changed), a copy with every fifth word changed, and an
// unrelated page.
func pages() (page, near, far, other string) {
	r := rand.New(rand.NewPCG(10, 11))
	words := func() []string {
		w := make([]string, 1000)
		for i := range w {
			w[i] = fmt.Sprintf("w%d", r.IntN(2000))
		}
		return w
	}
	p := words()
	edit := func(every int) string {
		e := append([]string(nil), p...)
		for i := every / 2; i < len(e); i += every {
			e[i] = "changed"
		}
		return strings.Join(e, " ")
	}
	return strings.Join(p, " "), edit(200), edit(5), strings.Join(words(), " ")
}

// TestVerifiedAnswers: in an index with sketches, documents sent as text
// keep their sketch; queries, insert-if-new, pairs and clusters about
// text carry each match's similarity and leave out what is below the
// "similarity" asked; a document sent as a fingerprint needs its sketch.
func TestVerifiedAnswers(t *testing.T) {
	ts := textServer(t)
	page, near, far, other := pages()
	for i, text := range []string{page, far, other} {
		body, _ := json.Marshal(map[string]any{"text": text, "name": fmt.Sprint("doc", i+1)})
		r := call(t, ts, "PUT", fmt.Sprintf("/v1/documents/%d", i+1), string(body))
		require.Equal(t, http.StatusOK, r.status, r.body)
		assert.Len(t, r.json(t)["sketch"], 2*textindex.Options(engine.Options{}).SketchSize, r.body)
	}
	query := func(body map[string]any) []map[string]any {
		b, _ := json.Marshal(body)
		r := call(t, ts, "POST", "/v1/query", string(b))
		require.Equal(t, http.StatusOK, r.status, r.body)
		var a struct{ Matches []map[string]any }
		require.NoError(t, json.Unmarshal([]byte(r.body), &a))
		return a.Matches
	}
	ms := query(map[string]any{"text": near})
	require.Len(t, ms, 1, "the page, not its far copy")
	assert.Equal(t, "doc1", ms[0]["name"])
	assert.Greater(t, ms[0]["similarity"], 0.8)
	assert.GreaterOrEqual(t, len(query(map[string]any{"text": near, "similarity": 0})), 1)

	// insert-if-new: the near copy is kept out, the unrelated one in.
	b, _ := json.Marshal(map[string]any{"id": 9, "text": near})
	r := call(t, ts, "POST", "/v1/insert-if-new", string(b))
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Equal(t, false, r.json(t)["inserted"], r.body)
	assert.Contains(t, r.body, `"similarity"`)

	r = call(t, ts, "GET", "/v1/pairs", "")
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Empty(t, strings.TrimSpace(r.body), "no stored pair is near")
	r = call(t, ts, "GET", "/v1/pairs?similarity=0", "")
	require.Equal(t, http.StatusOK, r.status, r.body)
	for _, line := range strings.Split(strings.TrimSpace(r.body), "\n") {
		if line != "" {
			assert.Contains(t, line, `"similarity"`)
		}
	}
	r = call(t, ts, "GET", "/v1/clusters?method=star", "")
	require.Equal(t, http.StatusOK, r.status, r.body)

	// batch: an export line of the index is answered about its text; a
	// bare fingerprint by distance.
	doc := call(t, ts, "GET", "/v1/documents/1", "").json(t)
	r = call(t, ts, "POST", "/v1/batch", fmt.Sprintf("1 %s %s doc1\n0x1\n", doc["fp"], doc["sketch"]))
	require.Equal(t, http.StatusOK, r.status, r.body)
	answers := strings.Split(strings.TrimSpace(r.body), "\n")
	require.Len(t, answers, 2, r.body)
	assert.Contains(t, answers[0], `"similarity":1`)
	assert.Contains(t, answers[0], `"qid":1`)
	assert.NotContains(t, answers[1], "similarity")

	// Refused: a fingerprint without its sketch, a bad sketch, a
	// similarity out of range, below the index's lowest or about a
	// fingerprint.
	size := textindex.Options(engine.Options{}).SketchSize
	for _, c := range []struct{ method, path, body, want string }{
		{"PUT", "/v1/documents/5", `{"fingerprint":"0x1"}`, "a sketch of 0 bytes"},
		{"PUT", "/v1/documents/5", `{"fingerprint":"0x1","sketch":"zz"}`, fmt.Sprintf("want %d hexadecimal digits", 2*size)},
		{"PUT", "/v1/documents/5", `{"text":"a b c","sketch":"00"}`, "goes with"},
		{"POST", "/v1/query", `{"text":"a b c","similarity":2}`, "want 0 to 1"},
		{"POST", "/v1/query", `{"fingerprint":"0x1","similarity":0.8}`, `compares texts: send`},
		{"POST", "/v1/query", `{"text":"a b c","similarity":0.5}`, `make it again with add --min-similarity 0.5`},
		{"GET", "/v1/pairs?similarity=0.6", "", "below the index's lowest"},
		{"GET", "/v1/pairs?similarity=x", "", "want a number from 0 to 1"},
	} {
		r := call(t, ts, c.method, c.path, c.body)
		assert.Equal(t, http.StatusBadRequest, r.status, "%s %s %s: %s", c.method, c.path, c.body, r.body)
		assert.Contains(t, r.body, c.want, c.body)
	}
	sk := strings.Repeat("ab", size)
	r = call(t, ts, "PUT", "/v1/documents/5", `{"fingerprint":"0x1","sketch":"`+sk+`"}`)
	require.Equal(t, http.StatusOK, r.status, r.body)
	r = call(t, ts, "GET", "/v1/documents/5", "")
	assert.Contains(t, r.body, sk)
}

// TestSimilarityNeedsSketches: an index without sketches refuses
// "similarity" and "sketch", and answers by distance.
func TestSimilarityNeedsSketches(t *testing.T) {
	ts, _ := testServer(t, Options{})
	for _, c := range []struct{ method, path, body string }{
		{"POST", "/v1/query", `{"text":"a b c","similarity":0.5}`},
		{"GET", "/v1/pairs?similarity=0.5", ""},
		{"PUT", "/v1/documents/1", `{"fingerprint":"0x1","sketch":"00"}`},
	} {
		r := call(t, ts, c.method, c.path, c.body)
		assert.Equal(t, http.StatusBadRequest, r.status, "%s %s: %s", c.method, c.path, r.body)
		assert.Contains(t, r.body, "keeps no sketches")
	}
	r := call(t, ts, "POST", "/v1/query", `{"text":"a b c"}`)
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.NotContains(t, r.body, "similarity")
}
