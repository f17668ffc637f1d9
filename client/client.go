// Package client talks to a running `simhashdb serve` over its JSON API
// (docs/server.md), with the engine's types and errors: a Go service that
// uses a served index calls the same operations, gets the same documents
// and matches, and tells errors apart the same way (errors.Is(err,
// engine.ErrNotFound)) as one that embeds the index.
//
// Calls that can be repeated without changing their outcome (reads, a
// document put or deleted by id, documents inserted with their ids) are
// tried again, with a doubling wait, when the connection fails or the
// server answers 502, 503 or 504 (a server restarting, or one whose
// in-flight bytes are full); InsertIfNew is not. Every call takes a
// context and stops when it is done.
package client

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/simhash"
)

// Options configure New. The zero value is usable.
type Options struct {
	// Token is the server's bearer token, if it has one.
	Token string
	// HTTPClient sends the requests: TLS settings, proxies, the pool of
	// connections. The default keeps up to 16 idle connections to the
	// server.
	HTTPClient *http.Client
	// Timeout bounds each call that is not a stream (default one minute);
	// the context's deadline binds too.
	Timeout time.Duration
	// Retries is how many more times an idempotent call is tried after a
	// failure worth retrying (default 3; negative: none).
	Retries int
	// Backoff is the wait before the first retry, doubled for each next
	// one (default 100 ms).
	Backoff time.Duration
	// BatchLines is the most documents InsertBatch sends in one request
	// (default 50,000; the server refuses more than its --max-batch).
	BatchLines int
}

// Client is a client of one server. It is safe for concurrent use.
type Client struct {
	base string
	o    Options
}

// New returns a client of the server at baseURL (http://HOST:PORT or
// https://HOST:PORT).
func New(baseURL string, o Options) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("client: server address %q: want http://HOST:PORT or https://HOST:PORT", baseURL)
	}
	if o.HTTPClient == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = 16
		o.HTTPClient = &http.Client{Transport: t}
	}
	if o.Timeout == 0 {
		o.Timeout = time.Minute
	}
	if o.Retries == 0 {
		o.Retries = 3
	}
	if o.Backoff == 0 {
		o.Backoff = 100 * time.Millisecond
	}
	if o.BatchLines <= 0 {
		o.BatchLines = 50_000
	}
	return &Client{base: strings.TrimRight(baseURL, "/"), o: o}, nil
}

// Put stores d under its id, once durable on the server.
func (c *Client) Put(ctx context.Context, d engine.Doc) error {
	body, err := json.Marshal(docBody(d, false))
	if err != nil {
		return err
	}
	return c.call(ctx, true, "PUT", "/v1/documents/"+strconv.FormatUint(d.ID, 10), body, nil)
}

// Get returns the document id; engine.ErrNotFound if there is none.
func (c *Client) Get(ctx context.Context, id uint64) (engine.Doc, error) {
	var j api.Doc
	if err := c.call(ctx, true, "GET", "/v1/documents/"+strconv.FormatUint(id, 10), nil, &j); err != nil {
		return engine.Doc{}, err
	}
	return j.Engine()
}

// Delete removes the document id and reports whether it was stored.
func (c *Client) Delete(ctx context.Context, id uint64) (bool, error) {
	var a struct {
		Deleted bool `json:"deleted"`
	}
	err := c.call(ctx, true, "DELETE", "/v1/documents/"+strconv.FormatUint(id, 10), nil, &a)
	return a.Deleted, err
}

// Query returns the stored documents within distance k of fp, nearest
// first.
func (c *Client) Query(ctx context.Context, fp uint64, k int) ([]engine.Match, error) {
	var a api.QueryAnswer
	q := url.Values{"fp": {simhash.Format(fp)}, "k": {strconv.Itoa(k)}}
	if err := c.call(ctx, true, "GET", "/v1/query?"+q.Encode(), nil, &a); err != nil {
		return nil, err
	}
	return matches(a.Matches)
}

// InsertIfNew stores d unless a stored document lies within distance k
// of it, atomically on the server, and returns those it found. It is not
// retried: a first try that stored d before its answer was lost would
// make a second find d itself.
func (c *Client) InsertIfNew(ctx context.Context, d engine.Doc, k int) (inserted bool, duplicates []engine.Match, err error) {
	b := docBody(d, true)
	b.K = &k
	body, err := json.Marshal(b)
	if err != nil {
		return false, nil, err
	}
	var a struct {
		Inserted   bool        `json:"inserted"`
		Duplicates []api.Match `json:"duplicates"`
	}
	if err := c.call(ctx, false, "POST", "/v1/insert-if-new", body, &a); err != nil {
		return false, nil, err
	}
	dups, err := matches(a.Duplicates)
	return a.Inserted, dups, err
}

// InsertBatch stores docs, in requests of up to Options.BatchLines
// documents, each stored at once (all of its documents or none); a
// request that fails is sent again. An error leaves the requests before
// it stored.
func (c *Client) InsertBatch(ctx context.Context, docs []engine.Doc) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	for len(docs) > 0 {
		n := min(len(docs), c.o.BatchLines)
		buf.Reset()
		for _, d := range docs[:n] {
			if err := enc.Encode(docBody(d, true)); err != nil {
				return err
			}
		}
		var a struct {
			Rejected int `json:"rejected"`
			Errors   []struct {
				Line  int    `json:"line"`
				Error string `json:"error"`
			} `json:"errors"`
		}
		if err := c.call(ctx, true, "POST", "/v1/documents", buf.Bytes(), &a); err != nil {
			return err
		}
		if a.Rejected > 0 && len(a.Errors) > 0 {
			e := a.Errors[0]
			return fmt.Errorf("%w: document %d: %s (%d refused in this request, the others stored)", engine.ErrInput, docs[e.Line-1].ID, e.Error, a.Rejected)
		}
		docs = docs[n:]
	}
	return nil
}

// Stats returns the index's statistics.
func (c *Client) Stats(ctx context.Context) (engine.Stats, error) {
	var s engine.Stats
	err := c.call(ctx, true, "GET", "/v1/stats", nil, &s)
	return s, err
}

// Docs streams every stored document, in id order.
func (c *Client) Docs(ctx context.Context) iter.Seq2[engine.Doc, error] {
	return func(yield func(engine.Doc, error) bool) {
		for line, err := range c.stream(ctx, "/v1/export") {
			var j api.Doc
			if err == nil {
				err = json.Unmarshal(line, &j)
			}
			var d engine.Doc
			if err == nil {
				d, err = j.Engine()
			}
			if !yield(d, err) || err != nil {
				return
			}
		}
	}
}

// FindAll streams every pair of stored documents within distance k.
func (c *Client) FindAll(ctx context.Context, k int) iter.Seq2[engine.Pair, error] {
	return func(yield func(engine.Pair, error) bool) {
		for line, err := range c.stream(ctx, "/v1/pairs?k="+strconv.Itoa(k)) {
			var j api.Pair
			if err == nil {
				err = json.Unmarshal(line, &j)
			}
			p := engine.Pair{Distance: j.Distance}
			if err == nil {
				if p.A, err = j.A.Engine(); err == nil {
					p.B, err = j.B.Engine()
				}
			}
			if !yield(p, err) || err != nil {
				return
			}
		}
	}
}

// docRequest is a document as a request sends it.
type docRequest struct {
	ID          *uint64 `json:"id,omitempty"`
	Fingerprint string  `json:"fingerprint"`
	Name        string  `json:"name,omitempty"`
	Sketch      string  `json:"sketch,omitempty"`
	K           *int    `json:"k,omitempty"`
}

// docBody is d as a request sends it; withID puts its id in the body.
func docBody(d engine.Doc, withID bool) docRequest {
	b := docRequest{Fingerprint: simhash.Format(d.Fingerprint), Name: d.Name}
	if withID {
		b.ID = &d.ID
	}
	if d.Sketch != "" {
		b.Sketch = api.DocOf(d).Sketch
	}
	return b
}

func matches(ms []api.Match) ([]engine.Match, error) {
	out := make([]engine.Match, len(ms))
	for i, m := range ms {
		var err error
		if out[i], err = m.Engine(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// stream yields the lines of a streamed answer; a line {"error": ...}
// ends it with that error. A stream is not retried once it has started.
func (c *Client) stream(ctx context.Context, path string) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		resp, err := c.send(ctx, true, "GET", path, nil)
		if err != nil {
			yield(nil, err)
			return
		}
		defer resp.Body.Close()
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 64<<10), 64<<20)
		for sc.Scan() {
			line := sc.Bytes()
			var e api.Error
			if bytes.HasPrefix(line, []byte(`{"error"`)) && json.Unmarshal(line, &e) == nil && e.Error != "" {
				yield(nil, fmt.Errorf("client: %s: %s", path, e.Error))
				return
			}
			if !yield(line, nil) {
				return
			}
		}
		if err := sc.Err(); err != nil {
			yield(nil, fmt.Errorf("client: %s: %w", path, err))
		}
	}
}
