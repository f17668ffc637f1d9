package server

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"

	"connectrpc.com/connect"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	simhashdbv1 "github.com/simhashdb/simhashdb/gen/simhashdb/v1"
	"github.com/simhashdb/simhashdb/textindex"
)

// counted is Writes that counts what the server sends it and fails
// Latest on demand, as a node cut off from its cluster's log does.
type counted struct {
	db      *engine.DB
	writes  atomic.Int64
	ifNew   atomic.Int64
	latest  atomic.Int64
	failing atomic.Bool
}

func (c *counted) Write(ctx context.Context, x engine.Commit) error {
	c.writes.Add(1)
	if c.failing.Load() {
		return fmt.Errorf("%w: stream simhashdb: no servers available", api.ErrUnavailable)
	}
	return c.db.Apply(ctx, x)
}

func (c *counted) InsertIfNew(ctx context.Context, d engine.Doc, k int) ([]engine.Match, bool, error) {
	c.ifNew.Add(1)
	return c.db.InsertIfNew(ctx, d, k)
}

func (c *counted) InsertIfNewSimilar(ctx context.Context, d engine.Doc, k int, s float64) ([]textindex.Match, bool, error) {
	c.ifNew.Add(1)
	return textindex.InsertIfNew(ctx, c.db, d, k, s)
}

func (c *counted) SetSetting(ctx context.Context, name string, value []byte) error {
	c.writes.Add(1)
	return api.KeepSetting(ctx, c.db, name, value)
}

func (c *counted) Latest(context.Context) error {
	c.latest.Add(1)
	if c.failing.Load() {
		return errors.New("stream simhashdb: no servers available")
	}
	return nil
}

// TestWrites: every write of every endpoint goes through Options.Writes,
// and "latest" reads wait on it (503 when it cannot tell).
func TestWrites(t *testing.T) {
	w := &counted{}
	ts, db := testServer(t, Options{Writes: w})
	w.db = db // before the first request

	for _, c := range []struct{ method, path, body string }{
		{"PUT", "/v1/documents/1", `{"fingerprint":"0x10"}`},
		{"POST", "/v1/documents", `{"id":2,"fingerprint":"0x20"}` + "\n" + `{"id":3,"fingerprint":"0x30"}`},
		{"DELETE", "/v1/documents/3", ""},
	} {
		r := call(t, ts, c.method, c.path, c.body)
		require.Equal(t, 200, r.status, r.body)
	}
	r := call(t, ts, "POST", "/v1/insert-if-new", `{"id":4,"fingerprint":"0x11","k":3}`)
	require.Equal(t, 200, r.status, r.body)
	assert.Equal(t, false, r.json(t)["inserted"])
	rpc := rpcClient(ts, false, "")
	_, err := rpc.Insert(context.Background(), connect.NewRequest(&simhashdbv1.InsertRequest{Id: 5, Content: &simhashdbv1.Content{Kind: &simhashdbv1.Content_Fingerprint{Fingerprint: 0x50}}}))
	require.NoError(t, err)
	_, err = rpc.Delete(context.Background(), connect.NewRequest(&simhashdbv1.DeleteRequest{Ids: []uint64{5}}))
	require.NoError(t, err)
	_, err = rpc.SetSetting(context.Background(), connect.NewRequest(&simhashdbv1.SetSettingRequest{Name: "a", Value: []byte("1")}))
	require.NoError(t, err)
	assert.Equal(t, int64(6), w.writes.Load())
	assert.Equal(t, int64(1), w.ifNew.Load())

	for _, path := range []string{"/v1/query?fp=0x10&latest=true", "/v1/fingerprints?fp=0x10&latest=true", "/v1/documents/1?latest=1"} {
		r = call(t, ts, "GET", path, "")
		require.Equal(t, 200, r.status, r.body)
	}
	r = call(t, ts, "POST", "/v1/query", `{"fingerprint":"0x10","latest":true}`)
	require.Equal(t, 200, r.status, r.body)
	_, err = rpc.Query(context.Background(), connect.NewRequest(&simhashdbv1.QueryRequest{Content: &simhashdbv1.Content{Kind: &simhashdbv1.Content_Fingerprint{Fingerprint: 0x10}}, Latest: true}))
	require.NoError(t, err)
	_, err = rpc.Get(context.Background(), connect.NewRequest(&simhashdbv1.GetRequest{Id: 1, Latest: true}))
	require.NoError(t, err)
	r = call(t, ts, "POST", "/v1/batch?k=3&latest=true", "0x10\n")
	require.Equal(t, 200, r.status, r.body)
	r = call(t, ts, "GET", "/v1/query?fp=0x10", "")
	require.Equal(t, 200, r.status, r.body)
	r = call(t, ts, "GET", "/v1/fingerprints?fp=0x10", "")
	require.Equal(t, 200, r.status, r.body)
	assert.Equal(t, int64(7), w.latest.Load(), "a query without latest does not wait")

	w.failing.Store(true)
	r = call(t, ts, "GET", "/v1/query?fp=0x10&latest=true", "")
	assert.Equal(t, 503, r.status, r.body)
	assert.Contains(t, r.body, "no servers available")
	assert.NotEmpty(t, r.header.Get("Retry-After"))
	r = call(t, ts, "PUT", "/v1/documents/8", `{"fingerprint":"0x80"}`)
	assert.Equal(t, 503, r.status, r.body)
	assert.Contains(t, r.body, "no servers available")
	_, err = rpc.Insert(context.Background(), connect.NewRequest(&simhashdbv1.InsertRequest{Id: 8, Content: &simhashdbv1.Content{Kind: &simhashdbv1.Content_Fingerprint{Fingerprint: 0x80}}}))
	assert.Equal(t, connect.CodeUnavailable, connect.CodeOf(err))

	for _, c := range []struct{ method, path, body, want string }{
		{"GET", "/v1/query?fp=0x10&latest=maybe", "", `latest \"maybe\"`},
		{"PUT", "/v1/documents/9", `{"fingerprint":"0x10","latest":true}`, `\"latest\" and \"shards\" do not belong to a document`},
		{"PUT", "/v1/documents/9", `{"fingerprint":"0x10","shards":2}`, `\"latest\" and \"shards\" do not belong to a document`},
		{"POST", "/v1/insert-if-new", `{"id":9,"fingerprint":"0x10","shards":2}`, `the client places documents over 2 shards, and this server holds one index`},
		{"POST", "/v1/insert-if-new", `{"id":9,"fingerprint":"0x10","shards":-1}`, `\"shards\" -1: want a count of shards`},
		{"POST", "/v1/insert-if-new", `{"id":9,"fingerprint":"0x10","latest":true}`, `\"latest\" is a query's`},
	} {
		r := call(t, ts, c.method, c.path, c.body)
		assert.Equal(t, 400, r.status, r.body)
		assert.Contains(t, r.body, c.want)
	}
}
