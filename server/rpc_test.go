package server

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"iter"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	simhashdbv1 "github.com/simhashdb/simhashdb/gen/simhashdb/v1"
	"github.com/simhashdb/simhashdb/gen/simhashdb/v1/simhashdbv1connect"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
)

// rpcServer serves a new index as testServer does, speaking HTTP/2
// without TLS too, as simhashdb serve does for gRPC clients.
func rpcServer(t *testing.T, opts Options) (*httptest.Server, *engine.DB) {
	return testServerWith(t, opts, func(srv *http.Server) {
		srv.Protocols = new(http.Protocols)
		srv.Protocols.SetHTTP1(true)
		srv.Protocols.SetUnencryptedHTTP2(true)
	})
}

// protocols are the three an RPC client may speak: gRPC (HTTP/2),
// gRPC-Web and Connect with JSON (HTTP/1.1).
var protocols = []struct {
	name string
	opts []connect.ClientOption
	h2c  bool
}{
	{"grpc", []connect.ClientOption{connect.WithGRPC()}, true},
	{"grpc-web", []connect.ClientOption{connect.WithGRPCWeb()}, false},
	{"connect-json", []connect.ClientOption{connect.WithProtoJSON()}, false},
}

// rpcClient is a client of ts in one protocol, sending token if not empty.
func rpcClient(ts *httptest.Server, h2c bool, token string, opts ...connect.ClientOption) simhashdbv1connect.IndexServiceClient {
	tr := &http.Transport{}
	if h2c {
		tr.Protocols = new(http.Protocols)
		tr.Protocols.SetUnencryptedHTTP2(true)
	}
	if token != "" {
		opts = append(opts, connect.WithInterceptors(api.Bearer(token)))
	}
	return simhashdbv1connect.NewIndexServiceClient(&http.Client{Transport: tr}, ts.URL, opts...)
}

// received collects a server stream's messages.
func received[T any](s *connect.ServerStreamForClient[T], err error) ([]*T, error) {
	if err != nil {
		return nil, err
	}
	var out []*T
	for s.Receive() {
		out = append(out, s.Msg())
	}
	if err := s.Err(); err != nil {
		return out, err
	}
	return out, s.Close()
}

var ctx = context.Background()

func fp(v uint64) *simhashdbv1.Content {
	return &simhashdbv1.Content{Kind: &simhashdbv1.Content_Fingerprint{Fingerprint: v}}
}

// TestRPC: every procedure, in each protocol, answers as the engine does
// (the oracle: the same calls on the index in process), over documents
// with planted neighbours at every distance 0..3, fingerprint 0 and
// all-ones among them.
func TestRPC(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			ts, db := rpcServer(t, Options{})
			c := rpcClient(ts, p.h2c, "", p.opts...)
			fps := append(fingerprints.Planted(300, 3, 0.2, 5), 0, ^uint64(0), 0)
			var reqs []*simhashdbv1.InsertRequest
			for i, f := range fps {
				reqs = append(reqs, &simhashdbv1.InsertRequest{Id: uint64(i + 1), Name: "doc " + string(rune('a'+i%26)), Content: fp(f)})
			}
			ans, err := c.InsertBatch(ctx, connect.NewRequest(&simhashdbv1.InsertBatchRequest{Documents: reqs[1:]}))
			require.NoError(t, err)
			require.Equal(t, uint32(len(reqs)-1), ans.Msg.Stored)
			one, err := c.Insert(ctx, connect.NewRequest(reqs[0]))
			require.NoError(t, err)
			require.Equal(t, uint64(1), one.Msg.Document.Id)

			got, err := c.Get(ctx, connect.NewRequest(&simhashdbv1.GetRequest{Id: 3}))
			require.NoError(t, err)
			want, err := db.Get(ctx, 3)
			require.NoError(t, err)
			require.Equal(t, api.DocProto(want).String(), got.Msg.Document.String())

			queries := fingerprints.Queries(fps, 50, 6)
			for _, q := range queries[:20] {
				a, err := c.Query(ctx, connect.NewRequest(&simhashdbv1.QueryRequest{Content: fp(q)}))
				require.NoError(t, err)
				ms, err := db.Query(ctx, q, 3)
				require.NoError(t, err)
				require.Equal(t, q, a.Msg.Fingerprint)
				requireMatches(t, ms, a.Msg.Matches)
				nf, err := c.QueryFingerprints(ctx, connect.NewRequest(&simhashdbv1.QueryFingerprintsRequest{Fingerprint: q}))
				require.NoError(t, err)
				ns, err := db.QueryFingerprints(ctx, nil, q, 3)
				require.NoError(t, err)
				require.Equal(t, append([]engine.Near{}, ns...), api.NearsFromProto(nf.Msg.Nears), "QueryFingerprints %#x", q)
			}
			k := uint32(2)
			msgs, err := received(c.QueryBatch(ctx, connect.NewRequest(&simhashdbv1.QueryBatchRequest{Fingerprints: queries, K: &k})))
			require.NoError(t, err)
			var batch []*simhashdbv1.QueryAnswer
			for _, m := range msgs {
				batch = append(batch, m.Answers...)
			}
			require.Len(t, batch, len(queries))
			for i, a := range batch {
				require.Equal(t, uint32(i), a.Index)
				ms, err := db.Query(ctx, queries[i], 2)
				require.NoError(t, err)
				requireMatches(t, ms, a.Matches)
			}

			var exported []uint64
			emsgs, err := received(c.Export(ctx, connect.NewRequest(&simhashdbv1.ExportRequest{})))
			require.NoError(t, err)
			for _, m := range emsgs {
				for _, d := range m.Documents {
					exported = append(exported, d.Id)
				}
			}
			require.Equal(t, collect(db.Docs(ctx), func(d engine.Doc) uint64 { return d.ID }), exported)

			var pairs [][2]uint64
			pmsgs, err := received(c.Pairs(ctx, connect.NewRequest(&simhashdbv1.PairsRequest{})))
			require.NoError(t, err)
			for _, m := range pmsgs {
				for _, pr := range m.Pairs {
					pairs = append(pairs, [2]uint64{pr.A.Id, pr.B.Id})
				}
			}
			require.NotEmpty(t, pairs)
			require.Equal(t, collect(db.FindAll(ctx, 3), func(p engine.Pair) [2]uint64 { return [2]uint64{p.A.ID, p.B.ID} }), pairs)

			for _, method := range []simhashdbv1.ClusterMethod{simhashdbv1.ClusterMethod_CLUSTER_METHOD_UNSPECIFIED, simhashdbv1.ClusterMethod_CLUSTER_METHOD_STAR} {
				var clusters [][]uint64
				cmsgs, err := received(c.Clusters(ctx, connect.NewRequest(&simhashdbv1.ClustersRequest{Method: method})))
				require.NoError(t, err)
				for _, m := range cmsgs {
					var ids []uint64
					for _, d := range m.Documents {
						ids = append(ids, d.Id)
					}
					clusters = append(clusters, ids)
				}
				seq := db.Clusters(ctx, 3)
				if method == simhashdbv1.ClusterMethod_CLUSTER_METHOD_STAR {
					seq = db.Stars(ctx, 3)
				}
				require.Equal(t, collect(seq, func(ds []engine.Doc) []uint64 {
					ids := make([]uint64, len(ds))
					for i, d := range ds {
						ids[i] = d.ID
					}
					return ids
				}), clusters, "method %v", method)
			}

			nearby := fps[0] ^ 1
			in, err := c.InsertIfNew(ctx, connect.NewRequest(&simhashdbv1.InsertIfNewRequest{Id: 9000, Content: fp(nearby)}))
			require.NoError(t, err)
			assert.False(t, in.Msg.Inserted, "a near-duplicate of document 1 is stored")
			assert.NotEmpty(t, in.Msg.Duplicates)
			far := uint64(0x5555_5555_5555_5555)
			in, err = c.InsertIfNew(ctx, connect.NewRequest(&simhashdbv1.InsertIfNewRequest{Id: 9001, Content: fp(far)}))
			require.NoError(t, err)
			assert.True(t, in.Msg.Inserted)

			_, err = c.Delete(ctx, connect.NewRequest(&simhashdbv1.DeleteRequest{Ids: []uint64{3, 123456}}))
			require.NoError(t, err)
			_, err = db.Get(ctx, 3)
			require.ErrorIs(t, err, engine.ErrNotFound)

			st, err := c.Stats(ctx, connect.NewRequest(&simhashdbv1.StatsRequest{}))
			require.NoError(t, err)
			est, err := db.Stats(ctx)
			require.NoError(t, err)
			require.Equal(t, est.Documents, st.Msg.Documents)
			require.Equal(t, uint32(3), st.Msg.K)
			chk, err := c.Check(ctx, connect.NewRequest(&simhashdbv1.CheckRequest{}))
			require.NoError(t, err)
			require.True(t, chk.Msg.Ok, chk.Msg.Problems)
			rep, err := db.Check(ctx)
			require.NoError(t, err)
			require.Equal(t, rep.Documents, chk.Msg.Documents)
			require.Equal(t, rep.Blocks, chk.Msg.Blocks)

			m := call(t, ts, "GET", "/metrics", "")
			require.Equal(t, http.StatusOK, m.status)
			for _, name := range []string{"rpc_Query", "rpc_QueryBatch", "rpc_InsertBatch", "rpc_Export"} {
				require.Contains(t, m.body, `simhashdb_http_requests_total{code="200",endpoint="`+name+`"}`, "each procedure counted")
			}
		})
	}
}

// requireMatches: the RPC's matches are the engine's, in order.
func requireMatches(t *testing.T, want []engine.Match, got []*simhashdbv1.Match) {
	t.Helper()
	w := make([]string, len(want))
	for i, m := range want {
		w[i] = api.MatchProto(m).String()
	}
	g := make([]string, len(got))
	for i, m := range got {
		g[i] = m.String()
	}
	require.Equal(t, w, g)
}

// collect is seq's values, converted.
func collect[T, U any](seq iter.Seq2[T, error], conv func(T) U) []U {
	var out []U
	for v, err := range seq {
		if err != nil {
			panic(err)
		}
		out = append(out, conv(v))
	}
	return out
}

// TestRPCErrors: each kind of refusal has its code and a message that
// names the problem, in every protocol.
func TestRPCErrors(t *testing.T) {
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			ts, _ := rpcServer(t, Options{MaxBatch: 10, MaxBatchBody: 4 << 10})
			c := rpcClient(ts, p.h2c, "", p.opts...)
			k := uint32(9)
			many := make([]*simhashdbv1.InsertRequest, 11)
			for i := range many {
				many[i] = &simhashdbv1.InsertRequest{Id: uint64(i), Content: fp(uint64(i))}
			}
			long := make([]byte, 5<<10)
			for i := range long {
				long[i] = 'x'
			}
			text := "some words"
			for _, tc := range []struct {
				name string
				call func() error
				code connect.Code
				says string
			}{
				{"missing document", func() error {
					_, err := c.Get(ctx, connect.NewRequest(&simhashdbv1.GetRequest{Id: 77}))
					return err
				}, connect.CodeNotFound, "77"},
				{"k above K", func() error {
					_, err := c.Query(ctx, connect.NewRequest(&simhashdbv1.QueryRequest{Content: fp(1), K: &k}))
					return err
				}, connect.CodeInvalidArgument, "distances 0 to 3"},
				{"fingerprints: k above K", func() error {
					_, err := c.QueryFingerprints(ctx, connect.NewRequest(&simhashdbv1.QueryFingerprintsRequest{Fingerprint: 1, K: &k}))
					return err
				}, connect.CodeInvalidArgument, "distances 0 to 3"},
				{"no content", func() error {
					_, err := c.Insert(ctx, connect.NewRequest(&simhashdbv1.InsertRequest{Id: 1}))
					return err
				}, connect.CodeInvalidArgument, "fingerprint"},
				{"similarity without sketches", func() error {
					sim := 0.9
					_, err := c.Query(ctx, connect.NewRequest(&simhashdbv1.QueryRequest{Content: &simhashdbv1.Content{Kind: &simhashdbv1.Content_Text{Text: text}}, Similarity: &sim}))
					return err
				}, connect.CodeInvalidArgument, "keeps no sketches"},
				{"sketch in an index without", func() error {
					_, err := c.Insert(ctx, connect.NewRequest(&simhashdbv1.InsertRequest{Id: 1, Content: &simhashdbv1.Content{Kind: &simhashdbv1.Content_Fingerprint{Fingerprint: 1}, Sketch: []byte{1, 2}}}))
					return err
				}, connect.CodeInvalidArgument, "sketch"},
				{"unknown cluster method", func() error {
					_, err := received(c.Clusters(ctx, connect.NewRequest(&simhashdbv1.ClustersRequest{Method: simhashdbv1.ClusterMethod(7)})))
					return err
				}, connect.CodeInvalidArgument, "method"},
				{"too many in a batch", func() error {
					_, err := c.InsertBatch(ctx, connect.NewRequest(&simhashdbv1.InsertBatchRequest{Documents: many}))
					return err
				}, connect.CodeInvalidArgument, "at most 10"},
				{"message over the limit", func() error {
					_, err := c.Insert(ctx, connect.NewRequest(&simhashdbv1.InsertRequest{Id: 1, Name: string(long), Content: fp(1)}))
					return err
				}, connect.CodeResourceExhausted, ""},
			} {
				t.Run(tc.name, func(t *testing.T) {
					err := tc.call()
					require.Error(t, err)
					require.Equal(t, tc.code, connect.CodeOf(err), "%v", err)
					require.Contains(t, err.Error(), tc.says)
				})
			}
		})
	}
}

// TestRPCToken: with a token, no procedure answers (reflection neither)
// without it or with another; with it, they do.
func TestRPCToken(t *testing.T) {
	ts, _ := rpcServer(t, Options{Token: "s3cret"})
	for _, p := range protocols {
		t.Run(p.name, func(t *testing.T) {
			for _, token := range []string{"", "wrong"} {
				c := rpcClient(ts, p.h2c, token, p.opts...)
				_, err := c.Stats(ctx, connect.NewRequest(&simhashdbv1.StatsRequest{}))
				require.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(err), "token %q: %v", token, err)
				_, err = c.Insert(ctx, connect.NewRequest(&simhashdbv1.InsertRequest{Id: 1, Content: fp(1)}))
				require.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(err), "token %q: %v", token, err)
				_, err = c.QueryFingerprints(ctx, connect.NewRequest(&simhashdbv1.QueryFingerprintsRequest{Fingerprint: 1}))
				require.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(err), "token %q: %v", token, err)
				s, err := c.Export(ctx, connect.NewRequest(&simhashdbv1.ExportRequest{}))
				if err == nil {
					for s.Receive() {
						t.Fatal("a document without the token")
					}
					err = s.Err()
				}
				require.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(err), "token %q: %v", token, err)
			}
			c := rpcClient(ts, p.h2c, "s3cret", p.opts...)
			_, err := c.Stats(ctx, connect.NewRequest(&simhashdbv1.StatsRequest{}))
			require.NoError(t, err)
		})
	}
	// Reflection streams both ways: gRPC over HTTP/2, as grpcurl speaks.
	h2c := &http.Transport{Protocols: new(http.Protocols)}
	h2c.Protocols.SetUnencryptedHTTP2(true)
	hc := &http.Client{Transport: h2c}
	rc := grpcreflect.NewClient(hc, ts.URL, connect.WithGRPC())
	_, err := rc.NewStream(ctx).ListServices()
	require.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(err), "reflection without the token: %v", err)
	rc = grpcreflect.NewClient(hc, ts.URL, connect.WithGRPC(), connect.WithInterceptors(api.Bearer("s3cret")))
	stream := rc.NewStream(ctx)
	names, err := stream.ListServices()
	require.NoError(t, err)
	require.Contains(t, names, protoreflect.FullName(simhashdbv1connect.IndexServiceName))
	_, err = stream.Close()
	if err != nil && !errors.Is(err, context.Canceled) {
		require.NoError(t, err)
	}
}

// TestRPCSameAsJSON: a query answered through the RPC and through GET
// /v1/query finds the same documents, and through GET /v1/fingerprints
// the same stored fingerprints.
func TestRPCSameAsJSON(t *testing.T) {
	ts, db := rpcServer(t, Options{})
	fps := fingerprints.Planted(200, 3, 0.2, 8)
	docs := make([]engine.Doc, len(fps))
	for i, f := range fps {
		docs[i] = engine.Doc{ID: uint64(i), Fingerprint: f, Name: "n"}
	}
	require.NoError(t, db.Load(ctx, engine.DocsOf(docs)))
	c := rpcClient(ts, false, "", connect.WithProtoJSON())
	for _, q := range fingerprints.Queries(fps, 30, 9) {
		a, err := c.Query(ctx, connect.NewRequest(&simhashdbv1.QueryRequest{Content: fp(q)}))
		require.NoError(t, err)
		var rpcIDs []uint64
		for _, m := range a.Msg.Matches {
			rpcIDs = append(rpcIDs, m.Id)
		}
		body := call(t, ts, "GET", "/v1/query?fp="+simhash.Format(q), "")
		require.Equal(t, http.StatusOK, body.status, body.body)
		var jsonIDs []uint64
		for _, m := range body.json(t)["matches"].([]any) {
			jsonIDs = append(jsonIDs, uint64(m.(map[string]any)["id"].(float64)))
		}
		require.True(t, slices.Equal(rpcIDs, jsonIDs), "%v against %v", rpcIDs, jsonIDs)
		nf, err := c.QueryFingerprints(ctx, connect.NewRequest(&simhashdbv1.QueryFingerprintsRequest{Fingerprint: q}))
		require.NoError(t, err)
		body = call(t, ts, "GET", "/v1/fingerprints?fp="+simhash.Format(q), "")
		require.Equal(t, http.StatusOK, body.status, body.body)
		var near api.NearAnswer
		require.NoError(t, json.Unmarshal([]byte(body.body), &near))
		require.Equal(t, api.NearAnswerOf(q, api.NearsFromProto(nf.Msg.Nears)), near)
	}
}

// TestRPCSettings: a setting kept through the RPC is the engine's
// (DB.Meta), one kept already is not changed, and none goes in without
// the token.
func TestRPCSettings(t *testing.T) {
	ts, db := rpcServer(t, Options{Token: "s3cret"})
	c := rpcClient(ts, false, "s3cret")
	_, err := c.GetSetting(ctx, connect.NewRequest(&simhashdbv1.GetSettingRequest{Name: "app.x"}))
	require.Equal(t, connect.CodeNotFound, connect.CodeOf(err), "%v", err)
	_, err = c.SetSetting(ctx, connect.NewRequest(&simhashdbv1.SetSettingRequest{Name: "app.x", Value: []byte("one")}))
	require.NoError(t, err)
	v, err := db.Meta(ctx, "app.x")
	require.NoError(t, err)
	assert.Equal(t, "one", string(v))
	_, err = c.SetSetting(ctx, connect.NewRequest(&simhashdbv1.SetSettingRequest{Name: "app.x", Value: []byte("one")}))
	require.NoError(t, err, "the same value again")
	_, err = c.SetSetting(ctx, connect.NewRequest(&simhashdbv1.SetSettingRequest{Name: "app.x", Value: []byte("two")}))
	require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err), "%v", err)
	assert.Contains(t, err.Error(), `setting "app.x" is kept already, with another value`)
	_, err = c.SetSetting(ctx, connect.NewRequest(&simhashdbv1.SetSettingRequest{Name: "", Value: []byte("v")}))
	require.Equal(t, connect.CodeInvalidArgument, connect.CodeOf(err), "no name: %v", err)
	a, err := c.GetSetting(ctx, connect.NewRequest(&simhashdbv1.GetSettingRequest{Name: "app.x"}))
	require.NoError(t, err)
	assert.Equal(t, "one", string(a.Msg.GetValue()))
	for _, token := range []string{"", "wrong"} {
		_, err = rpcClient(ts, false, token).SetSetting(ctx, connect.NewRequest(&simhashdbv1.SetSettingRequest{Name: "app.y", Value: []byte("v")}))
		require.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(err), "token %q: %v", token, err)
		_, err = rpcClient(ts, false, token).GetSetting(ctx, connect.NewRequest(&simhashdbv1.GetSettingRequest{Name: "app.x"}))
		require.Equal(t, connect.CodeUnauthenticated, connect.CodeOf(err), "token %q: %v", token, err)
	}
	_, err = db.Meta(ctx, "app.y")
	require.ErrorIs(t, err, engine.ErrNotFound)
}

// TestRPCRoutesEveryMethod: every method the definition declares is
// served (a method left out of routeRPC would answer 404).
func TestRPCRoutesEveryMethod(t *testing.T) {
	ts, _ := rpcServer(t, Options{})
	methods := simhashdbv1.File_simhashdb_v1_index_proto.Services().ByName("IndexService").Methods()
	require.Positive(t, methods.Len())
	for i := range methods.Len() {
		m := methods.Get(i)
		path := "/" + simhashdbv1connect.IndexServiceName + "/" + string(m.Name())
		ct := "application/proto"
		if m.IsStreamingServer() {
			ct = "application/connect+proto"
		}
		resp, err := http.Post(ts.URL+path, ct, http.NoBody)
		require.NoError(t, err)
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		require.NoError(t, err)
		if resp.StatusCode == http.StatusNotFound {
			// Connect's not_found (Get of no document) is an answer.
			assert.Contains(t, string(body), `"code":"not_found"`, "%s is not served", path)
		}
	}
}
