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
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
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
	// connections. The default keeps DefaultIdleConns idle connections to
	// the server.
	HTTPClient *http.Client
	// Timeout bounds each call that is not a stream (DefaultTimeout if
	// zero); the context's deadline binds too.
	Timeout time.Duration
	// Retries is how many more times an idempotent call is tried after a
	// failure worth retrying (DefaultRetries if zero; negative: none).
	Retries int
	// Backoff is the wait before the first retry, doubled for each next
	// one (DefaultBackoff if zero).
	Backoff time.Duration
	// BatchLines is the most documents or queries one request of
	// InsertBatch or QueryBatch carries (DefaultBatchLines if zero; the
	// server refuses more than its --max-batch).
	BatchLines int
}

// The defaults of Options.
const (
	DefaultIdleConns  = 16
	DefaultTimeout    = time.Minute
	DefaultRetries    = 3
	DefaultBackoff    = 100 * time.Millisecond
	DefaultBatchLines = 50_000
)

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
	switch {
	case o.Timeout < 0:
		return nil, fmt.Errorf("client: Options.Timeout %v: want a positive duration, or 0 for the default", o.Timeout)
	case o.Backoff < 0:
		return nil, fmt.Errorf("client: Options.Backoff %v: want a positive duration, or 0 for the default", o.Backoff)
	case o.BatchLines < 0:
		return nil, fmt.Errorf("client: Options.BatchLines %d: want a positive number, or 0 for the default", o.BatchLines)
	}
	if o.HTTPClient == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.MaxIdleConnsPerHost = DefaultIdleConns
		o.HTTPClient = &http.Client{Transport: t}
	}
	o.Timeout = cmp.Or(o.Timeout, DefaultTimeout)
	o.Retries = cmp.Or(o.Retries, DefaultRetries)
	o.Backoff = cmp.Or(o.Backoff, DefaultBackoff)
	o.BatchLines = cmp.Or(o.BatchLines, DefaultBatchLines)
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

// QueryBatch answers queries at distance k, in the order given, as the
// engine's QueryBatch does: in requests of up to Options.BatchLines
// queries, each answered by the server's batch mode and streamed back as
// the loop takes them (a slow loop slows the server's writing, not its
// memory). The next request is sent while the loop reads the answers to
// the one before, so that the server computes while the client decodes.
// A request is sent again only if no answer to it has started.
func (c *Client) QueryBatch(ctx context.Context, queries []uint64, k int) iter.Seq2[engine.BatchResult, error] {
	return func(yield func(engine.BatchResult, error) bool) {
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		path := "/v1/batch?k=" + strconv.Itoa(k)
		type opened struct {
			resp *http.Response
			err  error
		}
		open := func(chunk []uint64) <-chan opened {
			ch := make(chan opened, 1)
			go func() {
				body := make([]byte, 0, len(chunk)*19)
				for _, q := range chunk {
					body = append(append(body, simhash.Format(q)...), '\n')
				}
				resp, err := c.send(ctx, true, "POST", path, body)
				ch <- opened{resp, err}
			}()
			return ch
		}
		chunkAt := func(start int) []uint64 { return queries[start:min(start+c.o.BatchLines, len(queries))] }
		var next <-chan opened
		if len(queries) > 0 {
			next = open(chunkAt(0))
		}
		defer func() { // an answer opened and not read: let it go
			if next != nil {
				cancel()
				if o := <-next; o.resp != nil {
					o.resp.Body.Close()
				}
			}
		}()
		for start := 0; start < len(queries); start += c.o.BatchLines {
			chunk := chunkAt(start)
			o := <-next
			next = nil
			if o.err != nil {
				yield(engine.BatchResult{}, o.err)
				return
			}
			if end := start + len(chunk); end < len(queries) {
				next = open(chunkAt(end))
			}
			i, ok := start, true
			for line, err := range readLines(o.resp.Body, path) {
				var a api.QueryAnswer
				if err == nil {
					err = json.Unmarshal(line, &a)
				}
				if err == nil && a.Query == "" {
					err = fmt.Errorf("client: query %d: the server answered %s", i, line)
				}
				if err == nil && i >= start+len(chunk) {
					err = fmt.Errorf("client: the server answered more queries than the %d sent", len(chunk))
				}
				r := engine.BatchResult{Index: i}
				if err == nil {
					r.Query = chunk[i-start]
					r.Matches, err = matches(a.Matches)
				}
				if !yield(r, err) || err != nil {
					ok = false
					break
				}
				i++
			}
			o.resp.Body.Close()
			if !ok {
				return
			}
			if i != start+len(chunk) {
				yield(engine.BatchResult{}, fmt.Errorf("client: the server answered %d of %d queries", i-start, len(chunk)))
				return
			}
		}
	}
}

// Stats returns the index's statistics. As the engine's Stats, figures
// the index could not give make the error an *engine.StatsError, returned
// with the others.
func (c *Client) Stats(ctx context.Context) (engine.Stats, error) {
	var s api.Stats
	if err := c.call(ctx, true, "GET", "/v1/stats", nil, &s); err != nil {
		return engine.Stats{}, err
	}
	return s.Stats, s.Err()
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
	return c.streamed(ctx, "GET", path, nil)
}

// streamed is stream for any method.

func (c *Client) streamed(ctx context.Context, method, path string, body []byte) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		resp, err := c.send(ctx, true, method, path, body)
		if err != nil {
			yield(nil, err)
			return
		}
		defer resp.Body.Close()
		for line, err := range readLines(resp.Body, path) {
			if !yield(line, err) || err != nil {
				return
			}
		}
	}
}

// readLines yields the lines of a streamed answer; a line {"error": ...}
// ends it with that error.
func readLines(r io.Reader, path string) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		sc := bufio.NewScanner(r)
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
