// Package client talks to a running `simhashdb serve` through the API of
// proto/simhashdb/v1/index.proto (Connect's protocol, binary protobuf over
// HTTP), with the engine's types and errors: a Go service that uses a
// served index calls the same operations, gets the same documents and
// matches, and tells errors apart the same way (errors.Is(err,
// engine.ErrNotFound)) as one that embeds the index.
//
// Calls that can be repeated without changing their outcome (reads, a
// document inserted or deleted by id, documents inserted with their ids)
// are tried again, with a doubling wait, when the server cannot be reached
// or answers that it is unavailable (a server restarting, one whose
// in-flight bytes are full, a proxy's 502, 503 or 504); InsertIfNew only
// when its connection could not be made. Every call takes a context and
// stops when it is done.
//
// Given the nodes of a replicated index (simhashdb serve --nats, package
// replica), a client sends its calls to one node and moves to the next
// when that one cannot be reached or is unavailable, so a retried call
// goes to a live node.
package client

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"net/http"
	"strings"
	"time"

	"connectrpc.com/connect"
	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	simhashdbv1 "github.com/simhashdb/simhashdb/gen/simhashdb/v1"
	"github.com/simhashdb/simhashdb/gen/simhashdb/v1/simhashdbv1connect"
	"github.com/simhashdb/simhashdb/textindex"
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
	// server refuses more than its --max-batch, and a message larger
	// than its --max-batch-body).
	BatchLines int
	// Latest makes Get, Query, QueryText and QueryBatch, on a replicated
	// index, answer after every write acknowledged before them by any
	// node; without it a node answers as far as it has applied the
	// cluster's log (always after this client's own writes through it).
	Latest bool
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
	rpc simhashdbv1connect.IndexServiceClient
	o   Options
}

var _ interface {
	api.Index
	api.Verifier
	api.SchemaKeeper
} = (*Client)(nil)

// New returns a client of the server at baseURL (http://HOST:PORT or
// https://HOST:PORT), or of the nodes of a replicated index given comma
// separated: calls go to one node, and to the next when it cannot be
// reached or is unavailable.
func New(baseURL string, o Options) (*Client, error) {
	nodes, err := parseNodes(baseURL)
	if err != nil {
		return nil, err
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
	var opts []connect.ClientOption
	if o.Token != "" {
		opts = append(opts, connect.WithInterceptors(api.Bearer(o.Token)))
	}
	base := strings.TrimRight(baseURL, "/")
	if len(nodes) > 1 {
		hc := *o.HTTPClient
		hc.Transport = &route{next: cmp.Or[http.RoundTripper](hc.Transport, http.DefaultTransport), nodes: nodes}
		o.HTTPClient = &hc
		base = nodes[0].Scheme + "://" + nodes[0].Host
	}
	return &Client{rpc: simhashdbv1connect.NewIndexServiceClient(o.HTTPClient, base, opts...), o: o}, nil
}

// fingerprint is a query of fp.
func fingerprint(fp uint64) *simhashdbv1.Content {
	return &simhashdbv1.Content{Kind: &simhashdbv1.Content_Fingerprint{Fingerprint: fp}}
}

// content is d's fingerprint and its sketch, if it has one.
func content(d engine.Doc) *simhashdbv1.Content {
	c := fingerprint(d.Fingerprint)
	if d.Sketch != "" {
		c.Sketch = []byte(d.Sketch)
	}
	return c
}

// Insert stores d under its id, once durable on the server.
func (c *Client) Insert(ctx context.Context, d engine.Doc) error {
	_, err := unary(ctx, c, true, "Insert", c.rpc.Insert, &simhashdbv1.InsertRequest{Id: d.ID, Name: d.Name, Content: content(d)})
	return err
}

// Get returns the document id; engine.ErrNotFound if there is none.
func (c *Client) Get(ctx context.Context, id uint64) (engine.Doc, error) {
	a, err := unary(ctx, c, true, "Get", c.rpc.Get, &simhashdbv1.GetRequest{Id: id, Latest: c.o.Latest})
	if err != nil {
		return engine.Doc{}, err
	}
	return api.DocFromProto(a.GetDocument()), nil
}

// Delete removes the documents ids; ids not stored are left alone.
func (c *Client) Delete(ctx context.Context, ids ...uint64) error {
	for len(ids) > 0 {
		n := min(len(ids), c.o.BatchLines)
		if _, err := unary(ctx, c, true, "Delete", c.rpc.Delete, &simhashdbv1.DeleteRequest{Ids: ids[:n]}); err != nil {
			return err
		}
		ids = ids[n:]
	}
	return nil
}

// Query returns the stored documents within distance k of fp, nearest
// first.
func (c *Client) Query(ctx context.Context, fp uint64, k int) ([]engine.Match, error) {
	kk, err := distance(k)
	if err != nil {
		return nil, err
	}
	a, err := unary(ctx, c, true, "Query", c.rpc.Query, &simhashdbv1.QueryRequest{Content: fingerprint(fp), K: &kk, Latest: c.o.Latest})
	if err != nil {
		return nil, err
	}
	return api.MatchesFromProto(a.GetMatches()), nil
}

// QueryFingerprints appends to dst the distinct stored fingerprints
// within distance k of fp, nearest first, without their documents
// (engine.DB.QueryFingerprints), and returns it.
func (c *Client) QueryFingerprints(ctx context.Context, dst []engine.Near, fp uint64, k int) ([]engine.Near, error) {
	kk, err := distance(k)
	if err != nil {
		return dst, err
	}
	a, err := unary(ctx, c, true, "QueryFingerprints", c.rpc.QueryFingerprints, &simhashdbv1.QueryFingerprintsRequest{Fingerprint: fp, K: &kk, Latest: c.o.Latest})
	if err != nil {
		return dst, err
	}
	return append(dst, api.NearsFromProto(a.GetNears())...), nil
}

// QueryText returns the documents within distance k of text, which the
// server reads and fingerprints with the index's options; in an index of
// text, those whose sketches estimate a similarity from similarity on (nil:
// the server's default), each with it. fp is the text's fingerprint.
func (c *Client) QueryText(ctx context.Context, text string, k int, similarity *float64) (fp uint64, matches []textindex.Match, err error) {
	req, err := textQuery(text, k, similarity, c.o.Latest)
	if err != nil {
		return 0, nil, err
	}
	a, err := unary(ctx, c, true, "Query", c.rpc.Query, req)
	if err != nil {
		return 0, nil, err
	}
	return a.GetFingerprint(), api.VerifiedFromProto(a.GetMatches()), nil
}

// textQuery is the query of text.
func textQuery(text string, k int, similarity *float64, latest bool) (*simhashdbv1.QueryRequest, error) {
	kk, err := distance(k)
	if err != nil {
		return nil, err
	}
	return &simhashdbv1.QueryRequest{Content: &simhashdbv1.Content{Kind: &simhashdbv1.Content_Text{Text: text}}, K: &kk, Similarity: similarity, Latest: latest}, nil
}

// distance is k as a request carries it.
func distance(k int) (uint32, error) {
	if k < 0 {
		return 0, fmt.Errorf("%w: k %d: want a distance from 0", engine.ErrDistance, k)
	}
	return uint32(min(k, 1<<16)), nil
}

// InsertIfNew stores d unless a stored document lies within distance k
// of it, atomically on the server, and returns those it found. It is not
// retried: a first try that stored d before its answer was lost would
// make a second find d itself.
func (c *Client) InsertIfNew(ctx context.Context, d engine.Doc, k int) (duplicates []engine.Match, inserted bool, err error) {
	a, err := c.insertIfNew(ctx, d, k, nil)
	if err != nil {
		return nil, false, err
	}
	return api.MatchesFromProto(a.GetDuplicates()), a.GetInserted(), nil
}

// InsertIfNewSimilar is InsertIfNew in an index of text: d (with its
// sketch) is stored unless a stored document lies within k of it with an
// estimated similarity of at least similarity, and those that do are
// returned, each with it (textindex.InsertIfNew on the server). Not
// retried, as InsertIfNew.
func (c *Client) InsertIfNewSimilar(ctx context.Context, d engine.Doc, k int, similarity float64) (duplicates []textindex.Match, inserted bool, err error) {
	a, err := c.insertIfNew(ctx, d, k, &similarity)
	if err != nil {
		return nil, false, err
	}
	return api.VerifiedFromProto(a.GetDuplicates()), a.GetInserted(), nil
}

// insertIfNew asks for the decision on d.
func (c *Client) insertIfNew(ctx context.Context, d engine.Doc, k int, similarity *float64) (*simhashdbv1.InsertIfNewResponse, error) {
	req, err := ifNewRequest(d, k, similarity)
	if err != nil {
		return nil, err
	}
	return c.decide(ctx, req)
}

// ifNewRequest is the insert-if-new request of d.
func ifNewRequest(d engine.Doc, k int, similarity *float64) (*simhashdbv1.InsertIfNewRequest, error) {
	kk, err := distance(k)
	if err != nil {
		return nil, err
	}
	return &simhashdbv1.InsertIfNewRequest{Id: d.ID, Name: d.Name, Content: content(d), K: &kk, Similarity: similarity}, nil
}

// decide sends req, once (it is not idempotent).
func (c *Client) decide(ctx context.Context, req *simhashdbv1.InsertIfNewRequest) (*simhashdbv1.InsertIfNewResponse, error) {
	return unary(ctx, c, false, "InsertIfNew", c.rpc.InsertIfNew, req)
}

// Meta returns the setting kept with the index under name
// (engine.DB.Meta), or engine.ErrNotFound.
func (c *Client) Meta(ctx context.Context, name string) ([]byte, error) {
	a, err := unary(ctx, c, true, "GetSetting", c.rpc.GetSetting, &simhashdbv1.GetSettingRequest{Name: name})
	if err != nil {
		return nil, err
	}
	return a.GetValue(), nil
}

// SetMeta keeps value under name with the index (engine.DB.SetMeta). The
// server refuses to change a setting it keeps already (engine.ErrInput):
// settings say how the stored documents were made.
func (c *Client) SetMeta(ctx context.Context, name string, value []byte) error {
	_, err := unary(ctx, c, true, "SetSetting", c.rpc.SetSetting, &simhashdbv1.SetSettingRequest{Name: name, Value: value})
	return err
}

// InsertBatch stores docs, in requests of up to Options.BatchLines
// documents, each stored at once (all of its documents or none); a
// request that fails is sent again. An error leaves the requests before
// it stored.
func (c *Client) InsertBatch(ctx context.Context, docs []engine.Doc) error {
	for len(docs) > 0 {
		n := min(len(docs), c.o.BatchLines)
		req := &simhashdbv1.InsertBatchRequest{Documents: make([]*simhashdbv1.InsertRequest, n)}
		for i, d := range docs[:n] {
			req.Documents[i] = &simhashdbv1.InsertRequest{Id: d.ID, Name: d.Name, Content: content(d)}
		}
		if _, err := unary(ctx, c, true, "InsertBatch", c.rpc.InsertBatch, req); err != nil {
			return err
		}
		docs = docs[n:]
	}
	return nil
}

// QueryBatch answers queries at distance k, in the order given, as the
// engine's QueryBatch does: in requests of up to Options.BatchLines
// queries, each answered by a stream the loop takes as it goes (a slow
// loop slows the server's writing, not its memory). The next request is
// sent while the loop reads the answers to the one before, so that the
// server computes while the client decodes. A request is sent again only
// if no answer to it has started.
func (c *Client) QueryBatch(ctx context.Context, queries []uint64, k int) iter.Seq2[engine.BatchResult, error] {
	return func(yield func(engine.BatchResult, error) bool) {
		kk, err := distance(k)
		if err != nil {
			yield(engine.BatchResult{}, err)
			return
		}
		ctx, cancel := context.WithCancel(ctx)
		defer cancel()
		type opened struct {
			s   *connect.ServerStreamForClient[simhashdbv1.QueryBatchResponse]
			err error
		}
		open := func(chunk []uint64) <-chan opened {
			ch := make(chan opened, 1)
			go func() {
				s, err := openStream(ctx, c, "QueryBatch", func(ctx context.Context) (*connect.ServerStreamForClient[simhashdbv1.QueryBatchResponse], error) {
					return c.rpc.QueryBatch(ctx, connect.NewRequest(&simhashdbv1.QueryBatchRequest{Fingerprints: chunk, K: &kk, Latest: c.o.Latest}))
				})
				ch <- opened{s, err}
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
				if o := <-next; o.s != nil {
					o.s.Close()
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
			i, err := start, error(nil)
			for err == nil && o.s.Receive() {
				for _, a := range o.s.Msg().GetAnswers() {
					if int(a.GetIndex()) != i-start || i >= start+len(chunk) {
						err = fmt.Errorf("client: QueryBatch: answer %d of the server out of order (query %d expected)", a.GetIndex(), i-start)
						break
					}
					if !yield(engine.BatchResult{Index: i, Query: chunk[i-start], Matches: api.MatchesFromProto(a.GetMatches())}, nil) {
						o.s.Close()
						return
					}
					i++
				}
			}
			if err == nil {
				err = o.s.Err()
			}
			o.s.Close()
			if err == nil && i != start+len(chunk) {
				err = fmt.Errorf("client: QueryBatch: the server answered %d of %d queries", i-start, len(chunk))
			}
			if err != nil {
				yield(engine.BatchResult{}, c.wrap("QueryBatch", err))
				return
			}
		}
	}
}

// Stats returns the index's statistics. As the engine's Stats, figures
// the index could not give make the error an *engine.StatsError, returned
// with the others.
func (c *Client) Stats(ctx context.Context) (engine.Stats, error) {
	a, err := unary(ctx, c, true, "Stats", c.rpc.Stats, &simhashdbv1.StatsRequest{})
	if err != nil {
		return engine.Stats{}, err
	}
	s := api.StatsFromProto(a)
	return s.Stats, s.Err()
}

// TextSchema is how the index reads text, in an index of text (nil in one
// of fingerprints): what a copy of it needs to read text alike.
func (c *Client) TextSchema(ctx context.Context) (*textindex.Schema, error) {
	a, err := unary(ctx, c, true, "Stats", c.rpc.Stats, &simhashdbv1.StatsRequest{})
	if err != nil {
		return nil, err
	}
	return api.StatsFromProto(a).Fingerprint, nil
}

// Check verifies every stored byte of the index on the server: the
// report, and an error that matches engine.ErrCorrupt and names every
// problem found.
func (c *Client) Check(ctx context.Context) (engine.CheckReport, error) {
	a, err := unary(ctx, c, true, "Check", c.rpc.Check, &simhashdbv1.CheckRequest{})
	if err != nil {
		return engine.CheckReport{}, err
	}
	rep := api.CheckFromProto(a)
	if !a.GetOk() {
		return rep, corrupt(a.GetProblems())
	}
	return rep, nil
}

// Docs streams every stored document, in id order.
func (c *Client) Docs(ctx context.Context) iter.Seq2[engine.Doc, error] {
	return streamed(ctx, c, "Export", func(ctx context.Context) (*connect.ServerStreamForClient[simhashdbv1.ExportResponse], error) {
		return c.rpc.Export(ctx, connect.NewRequest(&simhashdbv1.ExportRequest{}))
	}, func(m *simhashdbv1.ExportResponse, yield func(engine.Doc, error) bool) bool {
		for _, d := range m.GetDocuments() {
			if !yield(api.DocFromProto(d), nil) {
				return false
			}
		}
		return true
	})
}

// FindAll streams every pair of stored documents within distance k (in
// an index of text, those the sketches verify, as the server's Pairs
// gives them).
func (c *Client) FindAll(ctx context.Context, k int) iter.Seq2[engine.Pair, error] {
	return streamed(ctx, c, "Pairs", func(ctx context.Context) (*connect.ServerStreamForClient[simhashdbv1.PairsResponse], error) {
		kk, err := distance(k)
		if err != nil {
			return nil, err
		}
		return c.rpc.Pairs(ctx, connect.NewRequest(&simhashdbv1.PairsRequest{K: &kk}))
	}, func(m *simhashdbv1.PairsResponse, yield func(engine.Pair, error) bool) bool {
		for _, p := range m.GetPairs() {
			if !yield(engine.Pair{A: api.DocFromProto(p.GetA()), B: api.DocFromProto(p.GetB()), Distance: int(p.GetDistance())}, nil) {
				return false
			}
		}
		return true
	})
}

// Clusters streams the groups of stored documents joined by chains of
// pairs within distance k (connected components), as the engine's
// Clusters does.
func (c *Client) Clusters(ctx context.Context, k int) iter.Seq2[[]engine.Doc, error] {
	return c.clusters(ctx, k, simhashdbv1.ClusterMethod_CLUSTER_METHOD_COMPONENTS, nil)
}

// Stars streams clusters each of a centre and the documents within k of
// it, as the engine's Stars does.
func (c *Client) Stars(ctx context.Context, k int) iter.Seq2[[]engine.Doc, error] {
	return c.clusters(ctx, k, simhashdbv1.ClusterMethod_CLUSTER_METHOD_STAR, nil)
}

// VerifiedClusters streams the clusters of an index of text, of pairs
// within k whose sketches estimate a similarity from similarity on (with
// star, as Stars groups them).
func (c *Client) VerifiedClusters(ctx context.Context, k int, similarity float64, star bool) iter.Seq2[[]engine.Doc, error] {
	method := simhashdbv1.ClusterMethod_CLUSTER_METHOD_COMPONENTS
	if star {
		method = simhashdbv1.ClusterMethod_CLUSTER_METHOD_STAR
	}
	return c.clusters(ctx, k, method, &similarity)
}

// Pairs streams the pairs of an index of text within k whose sketches
// estimate a similarity from similarity on, with it.
func (c *Client) Pairs(ctx context.Context, k int, similarity float64) iter.Seq2[textindex.Pair, error] {
	return streamed(ctx, c, "Pairs", func(ctx context.Context) (*connect.ServerStreamForClient[simhashdbv1.PairsResponse], error) {
		kk, err := distance(k)
		if err != nil {
			return nil, err
		}
		return c.rpc.Pairs(ctx, connect.NewRequest(&simhashdbv1.PairsRequest{K: &kk, Similarity: &similarity}))
	}, func(m *simhashdbv1.PairsResponse, yield func(textindex.Pair, error) bool) bool {
		for _, p := range m.GetPairs() {
			pr := engine.Pair{A: api.DocFromProto(p.GetA()), B: api.DocFromProto(p.GetB()), Distance: int(p.GetDistance())}
			if !yield(textindex.Pair{Pair: pr, Similarity: p.GetSimilarity()}, nil) {
				return false
			}
		}
		return true
	})
}

func (c *Client) clusters(ctx context.Context, k int, method simhashdbv1.ClusterMethod, similarity *float64) iter.Seq2[[]engine.Doc, error] {
	return streamed(ctx, c, "Clusters", func(ctx context.Context) (*connect.ServerStreamForClient[simhashdbv1.ClustersResponse], error) {
		kk, err := distance(k)
		if err != nil {
			return nil, err
		}
		return c.rpc.Clusters(ctx, connect.NewRequest(&simhashdbv1.ClustersRequest{K: &kk, Method: method, Similarity: similarity}))
	}, func(m *simhashdbv1.ClustersResponse, yield func([]engine.Doc, error) bool) bool {
		docs := make([]engine.Doc, len(m.GetDocuments()))
		for i, d := range m.GetDocuments() {
			docs[i] = api.DocFromProto(d)
		}
		return yield(docs, nil)
	})
}
