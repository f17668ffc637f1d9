package server

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"

	"connectrpc.com/connect"
	"connectrpc.com/grpcreflect"
	simhashdbv1 "github.com/simhashdb/simhashdb/gen/simhashdb/v1"
	"github.com/simhashdb/simhashdb/gen/simhashdb/v1/simhashdbv1connect"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/textindex"
)

// The API of proto/simhashdb/v1/index.proto, served by connect-go beside
// the /v1 JSON endpoints: one handler answers gRPC, gRPC-Web and Connect
// (JSON or binary), on the same port, behind the same token, limits and
// metrics. The procedures call what the JSON endpoints call.

// routeRPC registers the service's procedures and server reflection (so
// that grpcurl lists them; behind the token too).
func (s *Server) routeRPC(service simhashdbv1connect.IndexServiceHandler) {
	_, h := simhashdbv1connect.NewIndexServiceHandler(service,
		connect.WithReadMaxBytes(int(s.opts.MaxBatchBody)), connect.WithSendMaxBytes(int(s.opts.MaxBatchBody)))
	serve := func(w http.ResponseWriter, r *http.Request) error {
		h.ServeHTTP(w, r)
		return nil
	}
	batchBody := func() int64 { return s.opts.MaxBatchBody }
	for _, p := range []string{
		simhashdbv1connect.IndexServiceInsertProcedure, simhashdbv1connect.IndexServiceGetProcedure,
		simhashdbv1connect.IndexServiceDeleteProcedure, simhashdbv1connect.IndexServiceQueryProcedure,
		simhashdbv1connect.IndexServiceQueryFingerprintsProcedure,
		simhashdbv1connect.IndexServiceInsertIfNewProcedure, simhashdbv1connect.IndexServiceExportProcedure,
		simhashdbv1connect.IndexServicePairsProcedure, simhashdbv1connect.IndexServiceClustersProcedure,
		simhashdbv1connect.IndexServiceStatsProcedure, simhashdbv1connect.IndexServiceCheckProcedure,
		simhashdbv1connect.IndexServiceGetSettingProcedure, simhashdbv1connect.IndexServiceSetSettingProcedure,
	} {
		s.route(p, rpcName(p), serve)
	}
	// Batches hold their room among the bytes in flight, as POST
	// /v1/documents and /v1/batch do.
	for _, p := range []string{simhashdbv1connect.IndexServiceInsertBatchProcedure, simhashdbv1connect.IndexServiceQueryBatchProcedure} {
		s.route(p, rpcName(p), s.withInflight(batchBody, serve))
	}
	reflector := grpcreflect.NewStaticReflector(simhashdbv1connect.IndexServiceName)
	for _, mount := range []func(*grpcreflect.Reflector, ...connect.HandlerOption) (string, http.Handler){grpcreflect.NewHandlerV1, grpcreflect.NewHandlerV1Alpha} {
		p, h := mount(reflector)
		s.mux.Handle(p, s.authenticated(h))
	}
}

// rpcName is a procedure's name in the metrics: "rpc_" and the method's
// name ("rpc_QueryBatch").
func rpcName(procedure string) string {
	return "rpc_" + procedure[strings.LastIndexByte(procedure, '/')+1:]
}

// rpcService implements simhashdbv1connect.IndexServiceHandler.
type rpcService struct{ s *Server }

var _ simhashdbv1connect.IndexServiceHandler = rpcService{}

// rpcError is err as the RPC's error: the code of the HTTP status the
// JSON endpoints answer it with, and the same message.
func (x rpcService) rpcError(procedure string, err error) error {
	return rpcErrorOf(x.s.opts.Logger, procedure, err)
}

// rpcErrorOf is rpcError for any handler of the service; logger receives
// the internal errors the client is not told.
func rpcErrorOf(logger *slog.Logger, procedure string, err error) error {
	if err == nil {
		return nil
	}
	status := statusOf(err)
	code := connect.CodeInternal
	switch status {
	case http.StatusBadRequest:
		code = connect.CodeInvalidArgument
	case http.StatusNotFound:
		code = connect.CodeNotFound
	case http.StatusForbidden:
		code = connect.CodeFailedPrecondition
	case http.StatusRequestEntityTooLarge, http.StatusInsufficientStorage:
		code = connect.CodeResourceExhausted
	case http.StatusRequestTimeout:
		code = connect.CodeDeadlineExceeded
	case http.StatusServiceUnavailable:
		code = connect.CodeUnavailable
	}
	switch {
	case errors.Is(err, context.Canceled):
		code = connect.CodeCanceled
	case errors.Is(err, context.DeadlineExceeded):
		code = connect.CodeDeadlineExceeded
	}
	if code == connect.CodeInternal {
		logger.Error("simhashdb server: request failed", "procedure", procedure, "err", err)
		return connect.NewError(code, errors.New("internal error"))
	}
	ce := connect.NewError(code, err)
	kind := api.ErrorKindOf(err)
	if kind == "" && status == http.StatusBadRequest {
		kind = "input" // a malformed request, as the engine's ErrInput
	}
	if kind != "" {
		ce.Meta().Set(api.ErrorKindHeader, kind)
	}
	return ce
}

// doc is a document of a request.
func (x rpcService) doc(id uint64, name string, c *simhashdbv1.Content) (engine.Doc, error) {
	fp, sk, err := x.content(c)
	if err != nil {
		return engine.Doc{}, err
	}
	if len(name) > engine.MaxName {
		return engine.Doc{}, bad(`"name" of %d bytes, at most %d`, len(name), engine.MaxName)
	}
	return engine.Doc{ID: id, Fingerprint: fp, Name: name, Sketch: sk}, nil
}

// content is the fingerprint and sketch of c.
func (x rpcService) content(c *simhashdbv1.Content) (uint64, string, error) {
	switch k := c.GetKind().(type) {
	case *simhashdbv1.Content_Fingerprint:
		return x.s.content(&k.Fingerprint, c.GetSketch(), c.GetSketch() != nil, nil)
	case *simhashdbv1.Content_Text:
		if c.GetSketch() != nil {
			return 0, "", bad(`"sketch" goes with "fingerprint"`)
		}
		return x.s.content(nil, nil, false, &k.Text)
	}
	return 0, "", bad(`want "fingerprint" or "text" in "content"`)
}

// distance is a request's k, the index's K when absent.
func (x rpcService) distance(k *uint32) (int, error) { return x.s.distance(intK(k)) }

// intK is a request's k as the /v1 endpoints read it (nil when absent).
func intK(k *uint32) *int {
	if k == nil {
		return nil
	}
	kk := int(min(*k, 1<<16))
	return &kk
}

func (x rpcService) Insert(ctx context.Context, req *connect.Request[simhashdbv1.InsertRequest]) (*connect.Response[simhashdbv1.InsertResponse], error) {
	d, err := x.doc(req.Msg.GetId(), req.Msg.GetName(), req.Msg.GetContent())
	if err == nil {
		err = x.s.writes.Write(ctx, engine.Commit{Insert: []engine.Doc{d}})
	}
	if err != nil {
		return nil, x.rpcError("Insert", err)
	}
	return connect.NewResponse(&simhashdbv1.InsertResponse{Document: api.DocProto(d)}), nil
}

func (x rpcService) InsertBatch(ctx context.Context, req *connect.Request[simhashdbv1.InsertBatchRequest]) (*connect.Response[simhashdbv1.InsertBatchResponse], error) {
	in := req.Msg.GetDocuments()
	if len(in) > x.s.opts.MaxBatch {
		return nil, x.rpcError("InsertBatch", bad("%d documents in one batch, at most %d (--max-batch)", len(in), x.s.opts.MaxBatch))
	}
	docs := make([]engine.Doc, len(in))
	for i, r := range in {
		d, err := x.doc(r.GetId(), r.GetName(), r.GetContent())
		if err != nil {
			return nil, x.rpcError("InsertBatch", fmt.Errorf("documents[%d] (id %d): %w", i, r.GetId(), err))
		}
		docs[i] = d
	}
	if err := x.s.writes.Write(ctx, engine.Commit{Insert: docs}); err != nil {
		return nil, x.rpcError("InsertBatch", err)
	}
	return connect.NewResponse(&simhashdbv1.InsertBatchResponse{Stored: uint32(len(docs))}), nil
}

func (x rpcService) Get(ctx context.Context, req *connect.Request[simhashdbv1.GetRequest]) (*connect.Response[simhashdbv1.GetResponse], error) {
	if err := x.s.latest(ctx, req.Msg.GetLatest()); err != nil {
		return nil, x.rpcError("Get", err)
	}
	d, err := x.s.db.Get(ctx, req.Msg.GetId())
	if err != nil {
		return nil, x.rpcError("Get", err)
	}
	return connect.NewResponse(&simhashdbv1.GetResponse{Document: api.DocProto(d)}), nil
}

func (x rpcService) Delete(ctx context.Context, req *connect.Request[simhashdbv1.DeleteRequest]) (*connect.Response[simhashdbv1.DeleteResponse], error) {
	if n := len(req.Msg.GetIds()); n > x.s.opts.MaxBatch {
		return nil, x.rpcError("Delete", bad("%d ids in one request, at most %d (--max-batch)", n, x.s.opts.MaxBatch))
	}
	if err := x.s.writes.Write(ctx, engine.Commit{Delete: req.Msg.GetIds()}); err != nil {
		return nil, x.rpcError("Delete", err)
	}
	return connect.NewResponse(&simhashdbv1.DeleteResponse{}), nil
}

func (x rpcService) Query(ctx context.Context, req *connect.Request[simhashdbv1.QueryRequest]) (*connect.Response[simhashdbv1.QueryResponse], error) {
	ms, fp, err := x.query(ctx, req.Msg)
	if err != nil {
		return nil, x.rpcError("Query", err)
	}
	return connect.NewResponse(&simhashdbv1.QueryResponse{Fingerprint: fp, Matches: ms}), nil
}

func (x rpcService) QueryFingerprints(ctx context.Context, req *connect.Request[simhashdbv1.QueryFingerprintsRequest]) (*connect.Response[simhashdbv1.QueryFingerprintsResponse], error) {
	k, err := x.distance(req.Msg.K)
	if err != nil {
		return nil, x.rpcError("QueryFingerprints", err)
	}
	if err := x.s.latest(ctx, req.Msg.GetLatest()); err != nil {
		return nil, x.rpcError("QueryFingerprints", err)
	}
	ns, err := x.s.db.QueryFingerprints(ctx, nil, req.Msg.GetFingerprint(), k)
	if err != nil {
		return nil, x.rpcError("QueryFingerprints", err)
	}
	return connect.NewResponse(&simhashdbv1.QueryFingerprintsResponse{Nears: api.NearsProto(ns)}), nil
}

// query answers q as POST /v1/query does.
func (x rpcService) query(ctx context.Context, q *simhashdbv1.QueryRequest) ([]*simhashdbv1.Match, uint64, error) {
	fp, sk, err := x.content(q.GetContent())
	if err != nil {
		return nil, 0, err
	}
	a, err := x.s.ask(ctx, fp, sk, intK(q.K), q.Similarity, q.GetLatest())
	return matchesRPC(a), fp, err
}

// matchesRPC is an answer's matches as the RPC gives them.
func matchesRPC(a answer) []*simhashdbv1.Match {
	if a.sketched {
		return api.VerifiedProto(a.verified)
	}
	return api.MatchesProto(a.plain)
}

func (x rpcService) QueryBatch(ctx context.Context, req *connect.Request[simhashdbv1.QueryBatchRequest], out *connect.ServerStream[simhashdbv1.QueryBatchResponse]) error {
	fps := req.Msg.GetFingerprints()
	if len(fps) > x.s.opts.MaxBatch {
		return x.rpcError("QueryBatch", bad("%d queries in one batch, at most %d (--max-batch)", len(fps), x.s.opts.MaxBatch))
	}
	k, err := x.distance(req.Msg.K)
	if err != nil {
		return x.rpcError("QueryBatch", err)
	}
	if err := x.s.latest(ctx, req.Msg.GetLatest()); err != nil {
		return x.rpcError("QueryBatch", err)
	}
	i := 0
	return x.rpcError("QueryBatch", api.SendChunked(x.s.db.QueryBatch(ctx, fps, k), func(a engine.BatchResult) *simhashdbv1.QueryAnswer {
		i++
		return &simhashdbv1.QueryAnswer{Index: uint32(i - 1), Fingerprint: fps[i-1], Matches: api.MatchesProto(a.Matches)}
	}, func(as []*simhashdbv1.QueryAnswer) error {
		return out.Send(&simhashdbv1.QueryBatchResponse{Answers: as})
	}))
}

func (x rpcService) InsertIfNew(ctx context.Context, req *connect.Request[simhashdbv1.InsertIfNewRequest]) (*connect.Response[simhashdbv1.InsertIfNewResponse], error) {
	ans, err := x.insertIfNew(ctx, req.Msg)
	if err != nil {
		return nil, x.rpcError("InsertIfNew", err)
	}
	return connect.NewResponse(ans), nil
}

// insertIfNew answers as POST /v1/insert-if-new does.
func (x rpcService) insertIfNew(ctx context.Context, m *simhashdbv1.InsertIfNewRequest) (*simhashdbv1.InsertIfNewResponse, error) {
	k, err := x.distance(m.K)
	if err != nil {
		return nil, err
	}
	sim, err := x.s.similarity(m.Similarity)
	if err != nil {
		return nil, err
	}
	d, err := x.doc(m.GetId(), m.GetName(), m.GetContent())
	if err != nil {
		return nil, err
	}
	dups, inserted, err := x.s.insertIfNew(ctx, d, k, sim, int(m.GetShards()))
	_, shards := x.s.sharding()
	return &simhashdbv1.InsertIfNewResponse{Inserted: inserted, Duplicates: matchesRPC(dups), Shards: uint32(max(shards, 0))}, err
}

func (x rpcService) Export(ctx context.Context, _ *connect.Request[simhashdbv1.ExportRequest], out *connect.ServerStream[simhashdbv1.ExportResponse]) error {
	return x.rpcError("Export", api.SendChunked(x.s.db.Docs(ctx), api.DocProto, func(ds []*simhashdbv1.Document) error {
		return out.Send(&simhashdbv1.ExportResponse{Documents: ds})
	}))
}

func (x rpcService) Pairs(ctx context.Context, req *connect.Request[simhashdbv1.PairsRequest], out *connect.ServerStream[simhashdbv1.PairsResponse]) error {
	k, sim, verified, err := x.corpusQuery(req.Msg.K, req.Msg.Similarity)
	if err != nil {
		return x.rpcError("Pairs", err)
	}
	send := func(ps []*simhashdbv1.Pair) error { return out.Send(&simhashdbv1.PairsResponse{Pairs: ps}) }
	if verified {
		return x.rpcError("Pairs", api.SendChunked(textindex.Pairs(ctx, x.s.db, k, sim), func(p textindex.Pair) *simhashdbv1.Pair {
			return &simhashdbv1.Pair{A: api.DocProto(p.A), B: api.DocProto(p.B), Distance: uint32(p.Distance), Similarity: &p.Similarity}
		}, send))
	}
	return x.rpcError("Pairs", api.SendChunked(x.s.db.FindAll(ctx, k), func(p engine.Pair) *simhashdbv1.Pair {
		return &simhashdbv1.Pair{A: api.DocProto(p.A), B: api.DocProto(p.B), Distance: uint32(p.Distance)}
	}, send))
}

// corpusQuery is the distance and similarity of a request over the whole
// index: verified in an index with sketches, as GET /v1/pairs is.
func (x rpcService) corpusQuery(kp *uint32, sp *float64) (k int, sim float64, verified bool, err error) {
	if k, err = x.distance(kp); err != nil {
		return 0, 0, false, err
	}
	if sim, err = x.s.similarity(sp); err != nil {
		return 0, 0, false, err
	}
	return k, sim, textindex.Sketched(x.s.db), nil
}

func (x rpcService) Clusters(ctx context.Context, req *connect.Request[simhashdbv1.ClustersRequest], out *connect.ServerStream[simhashdbv1.ClustersResponse]) error {
	k, sim, verified, err := x.corpusQuery(req.Msg.K, req.Msg.Similarity)
	if err != nil {
		return x.rpcError("Clusters", err)
	}
	method := req.Msg.GetMethod()
	if _, known := simhashdbv1.ClusterMethod_name[int32(method)]; !known {
		return x.rpcError("Clusters", bad(`"method" %d: want components or star`, int32(method)))
	}
	star := method == simhashdbv1.ClusterMethod_CLUSTER_METHOD_STAR
	for docs, err := range x.s.clusterSeq(ctx, k, sim, verified, star) {
		if err != nil {
			return x.rpcError("Clusters", err)
		}
		if err := out.Send(api.ClusterProto(docs)); err != nil {
			return err
		}
	}
	return nil
}

func (x rpcService) Stats(ctx context.Context, _ *connect.Request[simhashdbv1.StatsRequest]) (*connect.Response[simhashdbv1.StatsResponse], error) {
	a, err := x.s.statsOf(ctx)
	if err != nil {
		return nil, x.rpcError("Stats", err)
	}
	return connect.NewResponse(api.StatsProto(a)), nil
}

func (x rpcService) Check(ctx context.Context, _ *connect.Request[simhashdbv1.CheckRequest]) (*connect.Response[simhashdbv1.CheckResponse], error) {
	rep, err := x.s.db.Check(ctx)
	if err != nil && !errors.Is(err, engine.ErrCorrupt) {
		return nil, x.rpcError("Check", err)
	}
	ans := api.CheckProto(rep)
	ans.Ok = err == nil
	if err != nil {
		ans.Problems = err.Error()
	}
	return connect.NewResponse(ans), nil
}

func (x rpcService) GetSetting(ctx context.Context, req *connect.Request[simhashdbv1.GetSettingRequest]) (*connect.Response[simhashdbv1.GetSettingResponse], error) {
	v, err := x.s.db.Meta(ctx, req.Msg.GetName())
	if err != nil {
		return nil, x.rpcError("GetSetting", err)
	}
	return connect.NewResponse(&simhashdbv1.GetSettingResponse{Value: v}), nil
}

// SetSetting keeps a new setting, or one as it is already: a setting
// says how the stored documents were made (how text is read, how paths
// name documents), and changing it under them would make new documents
// unlike the stored ones.
func (x rpcService) SetSetting(ctx context.Context, req *connect.Request[simhashdbv1.SetSettingRequest]) (*connect.Response[simhashdbv1.SetSettingResponse], error) {
	x.s.settingMu.Lock()
	defer x.s.settingMu.Unlock()
	if err := x.s.writes.SetSetting(ctx, req.Msg.GetName(), req.Msg.GetValue()); err != nil {
		return nil, x.rpcError("SetSetting", err)
	}
	return connect.NewResponse(&simhashdbv1.SetSettingResponse{}), nil
}
