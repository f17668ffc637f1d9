package client

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"connectrpc.com/connect"
	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	simhashdbv1 "github.com/simhashdb/simhashdb/gen/simhashdb/v1"
	"github.com/simhashdb/simhashdb/gen/simhashdb/v1/simhashdbv1connect"
	"github.com/simhashdb/simhashdb/textindex"
)

// This file serves the API in front of the shards: what a router process
// (simhashdb route) answers, so that a client in any language sends every
// call to one address and gets the one index's answers.

// Service answers IndexService's procedures from the shards, as Sharded
// does for a Go program: a document's writes, get and insert-if-new go
// to its id's shard as they came (text is read there, with the index's
// options), queries and batches to every shard and their answers merged,
// all pairs and clusters as Sharded's. A shard's refusal comes back with
// its code and error kind, its message naming the shard. Serve it behind
// server.NewRouter, which adds the token, the limits and the metrics.
func (s *Sharded) Service() simhashdbv1connect.IndexServiceHandler { return service{s} }

type service struct{ s *Sharded }

var _ simhashdbv1connect.IndexServiceHandler = service{}

// serviceError is err as the router answers the call whose context is
// ctx: a shard's refusal with its code and kind, the shard named; a shard
// that could not be reached unavailable (its caller may try again).
func serviceError(ctx context.Context, err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*connect.Error](err); ok && !errors.As(err, new(*Error)) {
		return err // the router's own
	}
	code := connect.CodeInternal
	kind := api.ErrorKindOf(err)
	msg := err.Error()
	if e, ok := errors.AsType[*Error](err); ok {
		code = e.Code
		if e.Message != "" {
			msg = strings.Replace(msg, e.Error(), e.Message, 1)
		}
		if code == connect.CodeUnauthenticated {
			// The router's token for the shard, not its caller's.
			code, msg = connect.CodeFailedPrecondition, msg+" (the router's token for the shard: --server-token-file)"
		}
	}
	switch {
	case errors.Is(ctx.Err(), context.Canceled):
		code = connect.CodeCanceled // the caller went away
	case errors.Is(ctx.Err(), context.DeadlineExceeded) || errors.Is(err, context.DeadlineExceeded):
		code = connect.CodeDeadlineExceeded
	case retryable(err) || code == connect.CodeCanceled:
		// A shard's connection failed (connect may call a write cut
		// short canceled), or it said it is unavailable.
		code = connect.CodeUnavailable
	case errors.Is(err, ErrSharded):
		code = connect.CodeFailedPrecondition
	case (errors.Is(err, engine.ErrInput) || errors.Is(err, api.ErrNotSharded)) && code == connect.CodeInternal:
		code = connect.CodeInvalidArgument // as an index's own server answers them
	}
	ce := connect.NewError(code, errors.New(msg))
	if kind != "" {
		ce.Meta().Set(api.ErrorKindHeader, kind)
	}
	return ce
}

// refuse is a request the router refuses itself.
func refuse(format string, args ...any) error {
	ce := connect.NewError(connect.CodeInvalidArgument, fmt.Errorf(format, args...))
	ce.Meta().Set(api.ErrorKindHeader, "input")
	return ce
}

func (x service) Insert(ctx context.Context, req *connect.Request[simhashdbv1.InsertRequest]) (*connect.Response[simhashdbv1.InsertResponse], error) {
	c, shard := x.owner(req.Msg.GetId())
	a, err := unary(ctx, c, true, "Insert", c.rpc.Insert, req.Msg)
	if err != nil {
		return nil, serviceError(ctx, fmt.Errorf("shard %d: %w", shard, err))
	}
	return connect.NewResponse(a), nil
}

// owner is the client of id's shard, and its number.
func (x service) owner(id uint64) (*Client, int) {
	i := api.ShardOf(id, len(x.s.shards))
	return x.s.shards[i], i
}

func (x service) InsertBatch(ctx context.Context, req *connect.Request[simhashdbv1.InsertBatchRequest]) (*connect.Response[simhashdbv1.InsertBatchResponse], error) {
	per := make([][]*simhashdbv1.InsertRequest, len(x.s.shards))
	for _, d := range req.Msg.GetDocuments() {
		i := api.ShardOf(d.GetId(), len(per))
		per[i] = append(per[i], d)
	}
	err := x.s.each(ctx, func(ctx context.Context, i int, c *Client) error {
		if len(per[i]) == 0 {
			return nil
		}
		_, err := unary(ctx, c, true, "InsertBatch", c.rpc.InsertBatch, &simhashdbv1.InsertBatchRequest{Documents: per[i]})
		return err
	})
	if err != nil {
		return nil, serviceError(ctx, err)
	}
	return connect.NewResponse(&simhashdbv1.InsertBatchResponse{Stored: uint32(len(req.Msg.GetDocuments()))}), nil
}

func (x service) Get(ctx context.Context, req *connect.Request[simhashdbv1.GetRequest]) (*connect.Response[simhashdbv1.GetResponse], error) {
	c, shard := x.owner(req.Msg.GetId())
	a, err := unary(ctx, c, true, "Get", c.rpc.Get, req.Msg)
	if err != nil {
		return nil, serviceError(ctx, fmt.Errorf("shard %d: %w", shard, err))
	}
	return connect.NewResponse(a), nil
}

func (x service) Delete(ctx context.Context, req *connect.Request[simhashdbv1.DeleteRequest]) (*connect.Response[simhashdbv1.DeleteResponse], error) {
	per := make([][]uint64, len(x.s.shards))
	for _, id := range req.Msg.GetIds() {
		i := api.ShardOf(id, len(per))
		per[i] = append(per[i], id)
	}
	err := x.s.each(ctx, func(ctx context.Context, i int, c *Client) error {
		if len(per[i]) == 0 {
			return nil
		}
		_, err := unary(ctx, c, true, "Delete", c.rpc.Delete, &simhashdbv1.DeleteRequest{Ids: per[i]})
		return err
	})
	if err != nil {
		return nil, serviceError(ctx, err)
	}
	return connect.NewResponse(&simhashdbv1.DeleteResponse{}), nil
}

func (x service) Query(ctx context.Context, req *connect.Request[simhashdbv1.QueryRequest]) (*connect.Response[simhashdbv1.QueryResponse], error) {
	a, err := x.s.query(ctx, req.Msg)
	if err != nil {
		return nil, serviceError(ctx, err)
	}
	return connect.NewResponse(a), nil
}

func (x service) QueryFingerprints(ctx context.Context, req *connect.Request[simhashdbv1.QueryFingerprintsRequest]) (*connect.Response[simhashdbv1.QueryFingerprintsResponse], error) {
	a, err := x.s.queryFingerprints(ctx, req.Msg)
	if err != nil {
		return nil, serviceError(ctx, err)
	}
	return connect.NewResponse(a), nil
}

// routedChunk is how many queries of a batch the router asks the shards
// at a time: their answers wait in its memory to be merged.
const routedChunk = api.StreamChunk

func (x service) QueryBatch(ctx context.Context, req *connect.Request[simhashdbv1.QueryBatchRequest], out *connect.ServerStream[simhashdbv1.QueryBatchResponse]) error {
	fps := req.Msg.GetFingerprints()
	for from := 0; from < len(fps); from += routedChunk {
		chunk := fps[from:min(from+routedChunk, len(fps))]
		per := make([][][]*simhashdbv1.Match, len(x.s.shards))
		err := x.s.each(ctx, func(ctx context.Context, i int, c *Client) error {
			per[i] = make([][]*simhashdbv1.Match, len(chunk))
			q := &simhashdbv1.QueryBatchRequest{Fingerprints: chunk, K: req.Msg.K, Latest: req.Msg.GetLatest()}
			open := func(ctx context.Context) (*connect.ServerStreamForClient[simhashdbv1.QueryBatchResponse], error) {
				return c.rpc.QueryBatch(ctx, connect.NewRequest(q))
			}
			for a, err := range streamed(ctx, c, "QueryBatch", open, func(m *simhashdbv1.QueryBatchResponse, yield func(*simhashdbv1.QueryAnswer, error) bool) bool {
				for _, a := range m.GetAnswers() {
					if !yield(a, nil) {
						return false
					}
				}
				return true
			}) {
				if err != nil {
					return err
				}
				if a.GetIndex() >= uint32(len(chunk)) {
					return fmt.Errorf("an answer to query %d of a batch of %d", a.GetIndex(), len(chunk))
				}
				per[i][a.GetIndex()] = a.GetMatches()
			}
			return nil
		})
		if err != nil {
			return serviceError(ctx, err)
		}
		m := &simhashdbv1.QueryBatchResponse{Answers: make([]*simhashdbv1.QueryAnswer, len(chunk))}
		for q, fp := range chunk {
			shards := make([][]*simhashdbv1.Match, len(per))
			for i := range per {
				shards[i] = per[i][q]
			}
			m.Answers[q] = &simhashdbv1.QueryAnswer{Index: uint32(from + q), Fingerprint: fp, Matches: merged(shards...)}
		}
		if err := out.Send(m); err != nil {
			return err
		}
	}
	return nil
}

func (x service) InsertIfNew(ctx context.Context, req *connect.Request[simhashdbv1.InsertIfNewRequest]) (*connect.Response[simhashdbv1.InsertIfNewResponse], error) {
	n := len(x.s.shards)
	if s := req.Msg.GetShards(); s > 1 && int(s) != n {
		return nil, serviceError(ctx, fmt.Errorf("%w: the request is over %d shards; this router's index has %d", api.ErrNotSharded, s, n))
	}
	r := req.Msg
	a, err := x.s.decide(ctx, &simhashdbv1.InsertIfNewRequest{Id: r.GetId(), Name: r.GetName(), Content: r.GetContent(), K: r.K, Similarity: r.Similarity})
	if err != nil {
		return nil, serviceError(ctx, err)
	}
	return connect.NewResponse(a), nil
}

func (x service) Export(ctx context.Context, _ *connect.Request[simhashdbv1.ExportRequest], out *connect.ServerStream[simhashdbv1.ExportResponse]) error {
	return serviceError(ctx, api.SendChunked(x.s.Docs(ctx), api.DocProto, func(ds []*simhashdbv1.Document) error {
		return out.Send(&simhashdbv1.ExportResponse{Documents: ds})
	}))
}

// corpus is a request over every document's k (the index's K when
// absent) and similarity: set in an index of text, the default there when
// absent.
func (x service) corpus(ctx context.Context, kp *uint32, sp *float64) (int, *float64, error) {
	st, err := x.s.Stats(ctx)
	if err != nil && !errors.As(err, new(*engine.StatsError)) {
		return 0, nil, err
	}
	k := st.K
	if kp != nil {
		k = int(min(*kp, 1<<16))
	}
	if sp == nil && textindex.SketchedSize(st.SketchSize) {
		d := textindex.DefaultSimilarity
		sp = &d
	}
	if sp != nil && (*sp < 0 || *sp > 1) {
		return 0, nil, refuse(`"similarity" %g: want 0 to 1`, *sp)
	}
	return k, sp, nil
}

func (x service) Pairs(ctx context.Context, req *connect.Request[simhashdbv1.PairsRequest], out *connect.ServerStream[simhashdbv1.PairsResponse]) error {
	k, sim, err := x.corpus(ctx, req.Msg.K, req.Msg.Similarity)
	if err != nil {
		return serviceError(ctx, err)
	}
	return serviceError(ctx, api.SendChunked(x.s.pairs(ctx, k, sim), func(p textindex.Pair) *simhashdbv1.Pair {
		m := &simhashdbv1.Pair{A: api.DocProto(p.A), B: api.DocProto(p.B), Distance: uint32(p.Distance)}
		if sim != nil {
			m.Similarity = &p.Similarity
		}
		return m
	}, func(ps []*simhashdbv1.Pair) error {
		return out.Send(&simhashdbv1.PairsResponse{Pairs: ps})
	}))
}

func (x service) Clusters(ctx context.Context, req *connect.Request[simhashdbv1.ClustersRequest], out *connect.ServerStream[simhashdbv1.ClustersResponse]) error {
	method := req.Msg.GetMethod()
	if _, known := simhashdbv1.ClusterMethod_name[int32(method)]; !known {
		return refuse(`"method" %d: want components or star`, int32(method))
	}
	k, sim, err := x.corpus(ctx, req.Msg.K, req.Msg.Similarity)
	if err != nil {
		return serviceError(ctx, err)
	}
	star := method == simhashdbv1.ClusterMethod_CLUSTER_METHOD_STAR
	groups := textindex.Group(func(yield func(engine.Pair, error) bool) {
		for p, err := range x.s.pairs(ctx, k, sim) {
			if !yield(p.Pair, err) || err != nil {
				return
			}
		}
	}, star)
	for docs, err := range groups {
		if err != nil {
			return serviceError(ctx, err)
		}
		if err := out.Send(api.ClusterProto(docs)); err != nil {
			return err
		}
	}
	return nil
}

func (x service) Stats(ctx context.Context, _ *connect.Request[simhashdbv1.StatsRequest]) (*connect.Response[simhashdbv1.StatsResponse], error) {
	a, err := api.StatsOfIndex(ctx, x.s)
	if err != nil {
		return nil, serviceError(ctx, err)
	}
	return connect.NewResponse(api.StatsProto(a)), nil
}

func (x service) Check(ctx context.Context, _ *connect.Request[simhashdbv1.CheckRequest]) (*connect.Response[simhashdbv1.CheckResponse], error) {
	rep, err := x.s.Check(ctx)
	if err != nil && !errors.Is(err, engine.ErrCorrupt) {
		return nil, serviceError(ctx, err)
	}
	a := api.CheckProto(rep)
	a.Ok = err == nil
	if err != nil {
		a.Problems = err.Error()
	}
	return connect.NewResponse(a), nil
}

func (x service) GetSetting(ctx context.Context, req *connect.Request[simhashdbv1.GetSettingRequest]) (*connect.Response[simhashdbv1.GetSettingResponse], error) {
	v, err := x.s.Meta(ctx, req.Msg.GetName())
	if err != nil {
		return nil, serviceError(ctx, err)
	}
	return connect.NewResponse(&simhashdbv1.GetSettingResponse{Value: v}), nil
}

func (x service) SetSetting(ctx context.Context, req *connect.Request[simhashdbv1.SetSettingRequest]) (*connect.Response[simhashdbv1.SetSettingResponse], error) {
	if err := x.s.SetMeta(ctx, req.Msg.GetName(), req.Msg.GetValue()); err != nil {
		return nil, serviceError(ctx, err)
	}
	return connect.NewResponse(&simhashdbv1.SetSettingResponse{}), nil
}
