package client_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/client"
	"github.com/simhashdb/simhashdb/engine"
	simhashdbv1 "github.com/simhashdb/simhashdb/gen/simhashdb/v1"
	"github.com/simhashdb/simhashdb/gen/simhashdb/v1/simhashdbv1connect"
	"github.com/simhashdb/simhashdb/server"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/textindex"
)

// textShards starts n servers of text indexes (sketches, the text
// index's fingerprinter) that require token.
func textShards(t *testing.T, n int, token string) []string {
	var urls []string
	for range n {
		db, err := engine.Open(t.TempDir(), textindex.Options(engine.Options{SizeHint: 1 << 10, Sync: engine.SyncNone}))
		require.NoError(t, err)
		f, err := simhash.New(simhash.Options{Shingle: textindex.Shingle})
		require.NoError(t, err)
		ts := httptest.NewServer(server.New(db, server.Options{Fingerprinter: f, Token: token}))
		t.Cleanup(func() { ts.Close(); db.Close() })
		urls = append(urls, ts.URL)
	}
	return urls
}

// TestRouter: a router in front of shards wants its own token, sends the
// shards theirs (a wrong one named as the router's, not the caller's),
// refuses batches over its limit before any shard stores a part, and
// leaves text to the shards: documents sent as text go to their id's
// shard, read there, and a query of text finds them on every shard.
func TestRouter(t *testing.T) {
	ctx := context.Background()
	urls := textShards(t, 2, "shard-token")
	sh, err := client.NewSharded(urls, client.Options{Token: "shard-token"})
	require.NoError(t, err)
	ts := httptest.NewServer(server.NewRouter(sh.Service(), server.Options{Token: "router-token", MaxBatch: 10}))
	t.Cleanup(ts.Close)

	for _, token := range []string{"", "shard-token", "router-tokenx"} {
		c, err := client.New(ts.URL, client.Options{Token: token, Retries: -1})
		require.NoError(t, err)
		_, err = c.Stats(ctx)
		require.ErrorIs(t, err, client.ErrUnauthorized, "token %q", token)
	}
	c, err := client.New(ts.URL, client.Options{Token: "router-token", Retries: -1})
	require.NoError(t, err)
	// The /v1 JSON endpoints are an index's own server's.
	req, err := http.NewRequest("GET", ts.URL+"/v1/stats", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer router-token")
	resp, err := ts.Client().Do(req)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)

	// Text, sent as the JSON of Connect's protocol as a client in another
	// language would, each document to its shard and read there.
	rpc := simhashdbv1connect.NewIndexServiceClient(ts.Client(), ts.URL, connect.WithProtoJSON(),
		connect.WithInterceptors(api.Bearer("router-token")))
	base := strings.Repeat("the quick brown fox jumps over the lazy dog near the river bank ", 30)
	for id := uint64(1); id <= 6; id++ {
		text := fmt.Sprintf("%s document number %d", base, id)
		if id > 3 {
			text = fmt.Sprintf("an unrelated page about something else entirely, number %d, with words of its own %s", id, strings.Repeat(fmt.Sprintf("w%d ", id), 40))
		}
		_, err := rpc.Insert(ctx, connect.NewRequest(&simhashdbv1.InsertRequest{Id: id, Name: fmt.Sprint("doc-", id),
			Content: &simhashdbv1.Content{Kind: &simhashdbv1.Content_Text{Text: text}}}))
		require.NoError(t, err, "document %d", id)
	}
	// A client that places documents over another count of shards.
	_, err = rpc.InsertIfNew(ctx, connect.NewRequest(&simhashdbv1.InsertIfNewRequest{Id: 99, Shards: 3,
		Content: &simhashdbv1.Content{Kind: &simhashdbv1.Content_Text{Text: base}}}))
	require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err), "%v", err)
	assert.ErrorContains(t, err, "over 3 shards; this router's index has 2")
	for i, u := range urls { // each shard holds its part
		one, err := client.New(u, client.Options{Token: "shard-token"})
		require.NoError(t, err)
		st, err := one.Stats(ctx)
		require.NoError(t, err)
		assert.Positive(t, st.Documents, "shard %d", i)
	}
	fp, viaRouter, err := c.QueryText(ctx, base+" document number 9", textindex.K, nil)
	require.NoError(t, err)
	fp2, direct, err := sh.QueryText(ctx, base+" document number 9", textindex.K, nil)
	require.NoError(t, err)
	assert.Equal(t, fp2, fp)
	assert.Equal(t, direct, viaRouter)
	var ids []uint64
	for _, m := range viaRouter {
		ids = append(ids, m.ID)
		assert.GreaterOrEqual(t, m.Similarity, textindex.DefaultSimilarity)
	}
	assert.ElementsMatch(t, []uint64{1, 2, 3}, ids)

	// A batch over the router's limit: refused whole.
	var docs []engine.Doc
	for i := range 11 {
		docs = append(docs, engine.Doc{ID: uint64(100 + i), Fingerprint: uint64(i)})
	}
	err = c.InsertBatch(ctx, docs)
	require.ErrorIs(t, err, engine.ErrInput)
	assert.ErrorContains(t, err, "11 documents in one batch, at most 10 (--max-batch)")
	st, err := c.Stats(ctx)
	require.NoError(t, err)
	assert.Equal(t, int64(6), st.Documents)

	// The router's token for the shards is wrong: the caller is told it
	// is the router's, and that it is not theirs.
	bad, err := client.NewSharded(urls, client.Options{Token: "wrong", Retries: -1})
	require.NoError(t, err)
	ts2 := httptest.NewServer(server.NewRouter(bad.Service(), server.Options{Token: "router-token"}))
	t.Cleanup(ts2.Close)
	c2, err := client.New(ts2.URL, client.Options{Token: "router-token", Retries: -1})
	require.NoError(t, err)
	_, err = c2.Get(ctx, 1)
	require.Error(t, err)
	assert.NotErrorIs(t, err, client.ErrUnauthorized)
	assert.ErrorContains(t, err, "the router's token for the shard")
	assert.ErrorContains(t, err, "shard 1")
}

// TestRouterShardDown: with a shard's server gone, a call that needs it
// is answered unavailable (so clients try again), naming the shard; calls
// of the other shard's documents are answered.
func TestRouterShardDown(t *testing.T) {
	ctx := context.Background()
	var servers []*httptest.Server
	var urls []string
	for range 2 {
		db, err := engine.Open(t.TempDir(), engine.Options{Sync: engine.SyncNone})
		require.NoError(t, err)
		ts := httptest.NewServer(server.New(db, server.Options{}))
		t.Cleanup(func() { ts.Close(); db.Close() })
		servers, urls = append(servers, ts), append(urls, ts.URL)
	}
	sh, err := client.NewSharded(urls, client.Options{Retries: -1})
	require.NoError(t, err)
	c := startRouter(t, sh, "")
	var onZero, onOne uint64
	for id := uint64(1); onZero == 0 || onOne == 0; id++ {
		if api.ShardOf(id, 2) == 0 {
			onZero = id
		} else {
			onOne = id
		}
	}
	require.NoError(t, c.InsertBatch(ctx, []engine.Doc{{ID: onZero, Fingerprint: 1}, {ID: onOne, Fingerprint: 3}}))
	servers[1].Close()
	_, err = c.Query(ctx, 1, 3)
	require.ErrorIs(t, err, client.ErrUnavailable)
	assert.ErrorContains(t, err, "shard 1")
	_, err = c.Get(ctx, onOne)
	require.ErrorIs(t, err, client.ErrUnavailable)
	got, err := c.Get(ctx, onZero)
	require.NoError(t, err)
	assert.Equal(t, uint64(1), got.Fingerprint)
}
