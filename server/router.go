package server

import (
	"context"
	"net/http"

	"connectrpc.com/connect"

	simhashdbv1 "github.com/simhashdb/simhashdb/gen/simhashdb/v1"
	"github.com/simhashdb/simhashdb/gen/simhashdb/v1/simhashdbv1connect"
)

// NewRouter returns a Server that answers the API of
// proto/simhashdb/v1/index.proto (gRPC, gRPC-Web and Connect, binary or
// JSON) with service: client.Sharded's Service, a router in front of an
// index's shards, for clients that do not place documents themselves.
// It keeps opts' token, body limits, batch limit, bytes in flight and
// metrics, and serves /healthz and /metrics; the /v1 JSON endpoints are
// an index's own server's, and answer 404 here. opts.Fingerprinter,
// TextReading and Writes are not used: the shards read text.
func NewRouter(service simhashdbv1connect.IndexServiceHandler, opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{opts: opts, mux: http.NewServeMux(), inflight: newInflight(opts.MaxInflight)}
	s.metrics = newMetrics(nil, nil)
	s.routeHealth()
	s.routeRPC(limited{service, opts})
	return s
}

// limited refuses batches over the server's --max-batch before they
// reach the shards, as an index's own server does.
type limited struct {
	simhashdbv1connect.IndexServiceHandler
	opts Options
}

// over is the refusal of n lines of what in one request of procedure, or
// nil.
func (l limited) over(procedure string, n int, what string) error {
	if n <= l.opts.MaxBatch {
		return nil
	}
	return rpcErrorOf(l.opts.Logger, procedure, bad("%d %s in one batch, at most %d (--max-batch)", n, what, l.opts.MaxBatch))
}

func (l limited) InsertBatch(ctx context.Context, req *connect.Request[simhashdbv1.InsertBatchRequest]) (*connect.Response[simhashdbv1.InsertBatchResponse], error) {
	if err := l.over("InsertBatch", len(req.Msg.GetDocuments()), "documents"); err != nil {
		return nil, err
	}
	return l.IndexServiceHandler.InsertBatch(ctx, req)
}

func (l limited) Delete(ctx context.Context, req *connect.Request[simhashdbv1.DeleteRequest]) (*connect.Response[simhashdbv1.DeleteResponse], error) {
	if err := l.over("Delete", len(req.Msg.GetIds()), "ids"); err != nil {
		return nil, err
	}
	return l.IndexServiceHandler.Delete(ctx, req)
}

func (l limited) QueryBatch(ctx context.Context, req *connect.Request[simhashdbv1.QueryBatchRequest], out *connect.ServerStream[simhashdbv1.QueryBatchResponse]) error {
	if err := l.over("QueryBatch", len(req.Msg.GetFingerprints()), "queries"); err != nil {
		return err
	}
	return l.IndexServiceHandler.QueryBatch(ctx, req, out)
}
