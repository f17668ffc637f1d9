package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testServer serves a new index on loopback (a real TCP connection).
func testServer(t *testing.T, opts Options) (*httptest.Server, *engine.DB) {
	t.Helper()
	return testServerWith(t, opts, nil)
}

// testServerWith is testServer with configure applied to the HTTP server
// before it starts (after, it would race with the serving goroutine).
func testServerWith(t *testing.T, opts Options, configure func(*http.Server)) (*httptest.Server, *engine.DB) {
	t.Helper()
	d, err := permutation.Blocks(3, 4)
	require.NoError(t, err)
	db, err := engine.Open(t.TempDir(), engine.Options{Design: d, Sync: engine.SyncNone})
	require.NoError(t, err)
	if opts.Fingerprinter == nil {
		opts.Fingerprinter = simhash.Default()
	}
	ts := httptest.NewUnstartedServer(New(db, opts))
	if configure != nil {
		configure(ts.Config)
	}
	ts.Start()
	t.Cleanup(func() {
		ts.Close()
		db.Close()
	})
	return ts, db
}

type reply struct {
	status int
	body   string
	header http.Header
}

func (r reply) json(t *testing.T) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(r.body), &m), r.body)
	return m
}

func call(t *testing.T, ts *httptest.Server, method, path, body string, header ...string) reply {
	t.Helper()
	req, err := http.NewRequest(method, ts.URL+path, strings.NewReader(body))
	require.NoError(t, err)
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return reply{resp.StatusCode, string(b), resp.Header}
}

func TestEndpoints(t *testing.T) {
	ts, _ := testServer(t, Options{})
	r := call(t, ts, "PUT", "/v1/documents/1", `{"fingerprint":"0x0123456789abcdef","name":"https://a.example/"}`)
	require.Equal(t, 200, r.status, r.body)
	assert.JSONEq(t, `{"id":1,"name":"https://a.example/","fp":"0x0123456789abcdef"}`, r.body)
	r = call(t, ts, "PUT", "/v1/documents/2", `{"text":"the quick brown fox jumps over the lazy dog"}`)
	require.Equal(t, 200, r.status, r.body)
	textFP := simhash.Format(simhash.Default().Text("the quick brown fox jumps over the lazy dog"))
	assert.Equal(t, textFP, r.json(t)["fp"])

	r = call(t, ts, "POST", "/v1/documents", "{\"id\":3,\"fingerprint\":\"0x0123456789abcdee\"}\n\n# a comment\n{\"id\":\"4\",\"fingerprint\":\"81985529216486894\",\"name\":\"b\"}\n{\"id\":5}\nnot json\n")
	require.Equal(t, 200, r.status, r.body)
	assert.JSONEq(t, `{"stored":2,"rejected":2,"ids":[3,4,null,null],"errors":[{"line":5,"error":"want \"fingerprint\" or \"text\""},{"line":6,"error":"malformed JSON: invalid character 'o' in literal null (expecting 'u')"}]}`, r.body)

	r = call(t, ts, "GET", "/v1/documents/4", "")
	assert.JSONEq(t, `{"id":4,"name":"b","fp":"0x0123456789abcdee"}`, r.body)

	r = call(t, ts, "GET", "/v1/query?fp=0x0123456789abcdef&k=1", "")
	require.Equal(t, 200, r.status, r.body)
	assert.JSONEq(t, `{"query":"0x0123456789abcdef","matches":[
		{"id":1,"name":"https://a.example/","fp":"0x0123456789abcdef","distance":0},
		{"id":3,"name":"","fp":"0x0123456789abcdee","distance":1},
		{"id":4,"name":"b","fp":"0x0123456789abcdee","distance":1}]}`, r.body)
	r = call(t, ts, "GET", "/v1/fingerprints?fp=0x0123456789abcdef&k=1", "")
	require.Equal(t, 200, r.status, r.body)
	assert.JSONEq(t, `{"query":"0x0123456789abcdef","fingerprints":[
		{"fp":"0x0123456789abcdef","distance":0},
		{"fp":"0x0123456789abcdee","distance":1}]}`, r.body, "a fingerprint two documents hold, once")
	r = call(t, ts, "GET", "/v1/fingerprints?fp=0xfedcba9876543210&k=0", "")
	require.Equal(t, 200, r.status, r.body)
	assert.JSONEq(t, `{"query":"0xfedcba9876543210","fingerprints":[]}`, r.body)
	r = call(t, ts, "POST", "/v1/query", `{"text":"the quick brown fox jumps over the lazy dog","k":0}`)
	require.Equal(t, 200, r.status, r.body)
	assert.Contains(t, r.body, `"id":2`)

	r = call(t, ts, "POST", "/v1/insert-if-new", `{"id":10,"fingerprint":"0x0123456789abcdec","k":2}`)
	require.Equal(t, 200, r.status, r.body)
	assert.Equal(t, false, r.json(t)["inserted"])
	assert.Len(t, r.json(t)["duplicates"], 3)
	r = call(t, ts, "POST", "/v1/insert-if-new", `{"id":11,"fingerprint":"0xff00ff00ff00ff00","name":"new"}`)
	assert.JSONEq(t, `{"inserted":true,"duplicates":[]}`, r.body)

	r = call(t, ts, "POST", "/v1/batch?k=0", "0x0123456789abcdef\nq7 0xff00ff00ff00ff00\nnonsense here now\n0xzz\n")
	require.Equal(t, 200, r.status, r.body)
	lines := strings.Split(strings.TrimSpace(r.body), "\n")
	require.Len(t, lines, 4)
	assert.Contains(t, lines[0], `"qid":1`)
	assert.Contains(t, lines[1], `"qid":"q7"`)
	assert.Contains(t, lines[1], `"id":11`)
	assert.Contains(t, lines[2], `{"line":3,"error":"want <fingerprint>, <qid> <fingerprint>`)
	assert.Contains(t, lines[3], `{"line":4,"error":"simhash: invalid fingerprint`)

	r = call(t, ts, "DELETE", "/v1/documents/1", "")
	assert.JSONEq(t, `{"id":1,"deleted":true}`, r.body)
	r = call(t, ts, "DELETE", "/v1/documents/1", "")
	assert.JSONEq(t, `{"id":1,"deleted":false}`, r.body)
	r = call(t, ts, "GET", "/v1/documents/1", "")
	assert.Equal(t, 404, r.status)
	assert.Contains(t, r.json(t)["error"], "not found")

	r = call(t, ts, "GET", "/v1/stats", "")
	require.Equal(t, 200, r.status, r.body)
	assert.EqualValues(t, 3, r.json(t)["k"])
	r = call(t, ts, "GET", "/healthz", "")
	assert.Equal(t, 200, r.status)
	assert.Equal(t, "ok\n", r.body)
	r = call(t, ts, "GET", "/metrics", "")
	require.Equal(t, 200, r.status)
	assert.Contains(t, r.body, `simhashdb_http_requests_total{code="200",endpoint="put"} 2`)
	assert.Contains(t, r.body, `simhashdb_http_requests_total{code="404",endpoint="get"} 1`)
	assert.Contains(t, r.body, "simhashdb_http_request_duration_seconds_bucket")
	assert.Contains(t, r.body, "simhashdb_disk_bytes")
	assert.Contains(t, r.body, "simhashdb_pebble_index_bytes")
	assert.Contains(t, r.body, "simhashdb_pebble_cache_size_bytes")
}

func TestBadRequests(t *testing.T) {
	ts, _ := testServer(t, Options{MaxBody: 200, MaxBatchBody: 1000, MaxBatch: 3})
	for _, c := range []struct {
		method, path, body string
		status             int
		msg                string
	}{
		{"PUT", "/v1/documents/1", `{"fingerprint":81985529216486895}`, 400, "JSON numbers lose precision"},
		{"PUT", "/v1/documents/1", `{"fingerprint":"0x1","text":"a"}`, 400, "not both"},
		{"PUT", "/v1/documents/1", `{"text":"\u0000\u0001ELF"}`, 400, `"text": binary content, not text`},
		{"PUT", "/v1/documents/1", `{"text":" -- "}`, 400, `"text": no words to fingerprint`},
		{"PUT", "/v1/documents/1", `{"text":"<html><script>x()</script></html>"}`, 400, "no words"},
		{"PUT", "/v1/documents/1", `{"fingerprint":"0x1","colour":"red"}`, 400, `unknown field "colour"`},
		{"PUT", "/v1/documents/1", `{"fingerprint":"0x1"} {}`, 400, "more than one JSON value"},
		{"PUT", "/v1/documents/1", ``, 400, "empty body"},
		{"PUT", "/v1/documents/1", `{"fingerprint":"10a8cdf1a3a8d1c7"}`, 400, "write it as 0x10a8cdf1a3a8d1c7"},
		{"PUT", "/v1/documents/x", `{"fingerprint":"0x1"}`, 400, `document id "x"`},
		{"PUT", "/v1/documents/18446744073709551616", `{"fingerprint":"0x1"}`, 400, "below 2^64"},
		{"PUT", "/v1/documents/1", `{"id":2,"fingerprint":"0x1"}`, 400, "differs from the path"},
		{"PUT", "/v1/documents/1", `{"name":"` + strings.Repeat("n", 300) + `"}`, 413, "request body too large"},
		{"GET", "/v1/query", ``, 400, "want ?fp="},
		{"GET", "/v1/query?fp=0x1&k=4", ``, 400, "the index answers distances 0 to 3"},
		{"GET", "/v1/query?fp=0x1&k=two", ``, 400, `k "two"`},
		{"GET", "/v1/fingerprints", ``, 400, "want ?fp="},
		{"GET", "/v1/fingerprints?fp=0xzz", ``, 400, "fp: "},
		{"GET", "/v1/fingerprints?fp=0x1&k=4", ``, 400, "the index answers distances 0 to 3"},
		{"GET", "/v1/fingerprints?fp=0x1&k=-1", ``, 400, "the index answers distances 0 to 3"},
		{"GET", "/v1/fingerprints?fp=0x1&latest=maybe", ``, 400, `latest "maybe"`},
		{"POST", "/v1/fingerprints?fp=0x1", ``, 405, ""},
		{"POST", "/v1/query", `{"fingerprint":"0x1","k":-1}`, 400, "the index answers distances 0 to 3"},
		{"POST", "/v1/query", `{"fingerprint":"0x1","name":"x"}`, 400, "a query has"},
		{"POST", "/v1/insert-if-new", `{"fingerprint":"0x1"}`, 400, `want "id"`},
		{"POST", "/v1/batch?k=9", "0x1\n", 400, "the index answers distances 0 to 3"},
		{"POST", "/v1/batch", "0x1\n0x2\n0x3\n0x4\n", 400, "more than 3 lines"},
		{"POST", "/v1/documents", "{\"id\":1,\"fingerprint\":\"0x1\"}\n{\"id\":2,\"fingerprint\":\"0x1\"}\n{\"id\":3,\"fingerprint\":\"0x1\"}\n{\"id\":4,\"fingerprint\":\"0x1\"}\n", 400, "more than 3 lines"},
		{"POST", "/v1/documents", strings.Repeat("#", 2000), 413, "request body too large"},
		{"GET", "/v1/nothing", ``, 404, ""},
		{"PATCH", "/v1/documents/1", `{}`, 405, ""},
	} {
		r := call(t, ts, c.method, c.path, c.body)
		assert.Equal(t, c.status, r.status, "%s %s %s: %s", c.method, c.path, c.body, r.body)
		if c.msg != "" {
			var e struct{ Error string }
			require.NoError(t, json.Unmarshal([]byte(r.body), &e), "a JSON error: %s", r.body)
			assert.Contains(t, e.Error, c.msg, "%s %s", c.method, c.path)
		}
	}
	r := call(t, ts, "GET", "/v1/documents/1", "")
	assert.Equal(t, 404, r.status, "nothing from the rejected requests was stored")
}

func TestAuthentication(t *testing.T) {
	ts, _ := testServer(t, Options{Token: "s3cret"})
	paths := []string{"/v1/documents/1", "/v1/query?fp=0x1", "/v1/fingerprints?fp=0x1", "/v1/stats", "/metrics"}
	headers := [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "s3cret"}, {"Authorization", "Bearer s3cret2"}, {"Authorization", "Basic czNjcmV0"}}
	for _, path := range paths {
		for _, h := range headers {
			r := call(t, ts, "GET", path, "", h...)
			assert.Equal(t, 401, r.status, "%s %v", path, h)
			assert.JSONEq(t, `{"error":"unauthorized"}`, r.body, "nothing else revealed")
		}
	}
	r := call(t, ts, "PUT", "/v1/documents/1", `{"fingerprint":"0x1"}`)
	assert.Equal(t, 401, r.status)
	r = call(t, ts, "GET", "/v1/documents/1", "", "Authorization", "Bearer s3cret")
	assert.Equal(t, 404, r.status, "the unauthorized PUT stored nothing")
	r = call(t, ts, "PUT", "/v1/documents/1", `{"fingerprint":"0x1"}`, "Authorization", "Bearer s3cret")
	assert.Equal(t, 200, r.status, r.body)
	r = call(t, ts, "GET", "/healthz", "")
	assert.Equal(t, 200, r.status, "health needs no token")
	r = call(t, ts, "GET", "/metrics", "", "Authorization", "Bearer s3cret")
	assert.Contains(t, r.body, fmt.Sprintf("simhashdb_http_unauthorized_total %d", len(paths)*len(headers)+1))
}

// TestConcurrentClients: writers and readers at once (run with -race);
// every acknowledged write is found.
func TestConcurrentClients(t *testing.T) {
	ts, db := testServer(t, Options{})
	const clients, each = 8, 60
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				id := c*each + i + 1
				body := fmt.Sprintf(`{"fingerprint":"%#x"}`, uint64(id)*0x9e3779b97f4a7c15)
				req, _ := http.NewRequest("PUT", fmt.Sprintf("%s/v1/documents/%d", ts.URL, id), strings.NewReader(body))
				resp, err := ts.Client().Do(req)
				if !assert.NoError(t, err) {
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				assert.Equal(t, 200, resp.StatusCode)
				resp, err = ts.Client().Get(fmt.Sprintf("%s/v1/query?fp=%#x&k=0", ts.URL, uint64(id)*0x9e3779b97f4a7c15))
				if !assert.NoError(t, err) {
					return
				}
				var a api.QueryAnswer
				assert.NoError(t, json.NewDecoder(resp.Body).Decode(&a))
				resp.Body.Close()
				assert.Len(t, a.Matches, 1, "a write is visible once acknowledged")
			}
		}()
	}
	wg.Wait()
	for id := 1; id <= clients*each; id++ {
		_, err := db.Get(context.Background(), uint64(id))
		require.NoError(t, err)
	}
}

// TestNamedDocuments: lines with a name and no id get the name's id; the
// same name again is the same document (unchanged, or replaced).
func TestNamedDocuments(t *testing.T) {
	ts, db := testServer(t, Options{})
	fox := simhash.Format(simhash.Default().Text("the quick brown fox"))
	dog := simhash.Format(simhash.Default().Text("the lazy dog"))
	post := func(body string) map[string]any {
		r := call(t, ts, "POST", "/v1/documents", body)
		require.Equal(t, 200, r.status, r.body)
		return r.json(t)
	}
	a := post(`{"name":"a.txt","text":"the quick brown fox"}` + "\n" + `{"name":"b.txt","text":"the lazy dog","k":1}` + "\n")
	assert.EqualValues(t, 1, a["stored"])
	assert.EqualValues(t, 1, a["rejected"])
	ids := a["ids"].([]any)
	require.Len(t, ids, 2)
	assert.Nil(t, ids[1])
	assert.Equal(t, []any{fox, nil}, a["fingerprints"])
	idA := uint64(ids[0].(float64))
	d, err := db.Get(context.Background(), idA)
	require.NoError(t, err)
	assert.Equal(t, "a.txt", d.Name)

	again := post(`{"name":"a.txt","text":"the quick brown fox"}`)
	assert.EqualValues(t, 0, again["stored"])
	assert.EqualValues(t, 1, again["unchanged"])
	assert.Equal(t, []any{float64(idA)}, again["ids"])

	changed := post(`{"name":"a.txt","text":"the lazy dog"}`)
	assert.EqualValues(t, 1, changed["stored"])
	assert.Equal(t, []any{float64(idA)}, changed["ids"])
	assert.Equal(t, []any{dog}, changed["fingerprints"])
	d, err = db.Get(context.Background(), idA)
	require.NoError(t, err)
	assert.Equal(t, dog, simhash.Format(d.Fingerprint))

	noText := post(`{"name":"c","fingerprint":"0x1"}`)
	assert.NotContains(t, noText, "fingerprints", "only answers with text lines carry fingerprints")
}
