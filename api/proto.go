package api

import (
	"context"
	"errors"
	"strings"
	"time"

	"connectrpc.com/connect"

	"github.com/simhashdb/simhashdb/engine"
	simhashdbv1 "github.com/simhashdb/simhashdb/gen/simhashdb/v1"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/textindex"
)

// The engine's types as the RPC API's messages (proto/simhashdb/v1) and
// back, one place for the server and the client.

// DocProto is d as a message.
func DocProto(d engine.Doc) *simhashdbv1.Document {
	return &simhashdbv1.Document{Id: d.ID, Fingerprint: d.Fingerprint, Name: d.Name, Sketch: []byte(d.Sketch)}
}

// ClusterProto is a cluster's documents as one message of the Clusters
// stream.
func ClusterProto(docs []engine.Doc) *simhashdbv1.ClustersResponse {
	m := &simhashdbv1.ClustersResponse{Documents: make([]*simhashdbv1.Document, len(docs))}
	for i, d := range docs {
		m.Documents[i] = DocProto(d)
	}
	return m
}

// DocFromProto is DocProto's inverse.
func DocFromProto(m *simhashdbv1.Document) engine.Doc {
	return engine.Doc{ID: m.GetId(), Fingerprint: m.GetFingerprint(), Name: m.GetName(), Sketch: string(m.GetSketch())}
}

// MatchProto is m as a message.
func MatchProto(m engine.Match) *simhashdbv1.Match {
	return &simhashdbv1.Match{Id: m.ID, Fingerprint: m.Fingerprint, Name: m.Name, Distance: uint32(m.Distance), Sketch: []byte(m.Sketch)}
}

// MatchesProto is ms as messages.
func MatchesProto(ms []engine.Match) []*simhashdbv1.Match {
	out := make([]*simhashdbv1.Match, len(ms))
	for i, m := range ms {
		out[i] = MatchProto(m)
	}
	return out
}

// NearsProto is QueryFingerprints' answer as messages.
func NearsProto(ns []engine.Near) []*simhashdbv1.Near {
	out := make([]*simhashdbv1.Near, len(ns))
	for i, n := range ns {
		out[i] = &simhashdbv1.Near{Fingerprint: n.Fingerprint, Distance: uint32(n.Distance)}
	}
	return out
}

// NearsFromProto is NearsProto's inverse.
func NearsFromProto(ns []*simhashdbv1.Near) []engine.Near {
	out := make([]engine.Near, len(ns))
	for i, n := range ns {
		out[i] = engine.Near{Fingerprint: n.GetFingerprint(), Distance: int(n.GetDistance())}
	}
	return out
}

// VerifiedProto is verified matches as messages, with their similarity.
func VerifiedProto(ms []textindex.Match) []*simhashdbv1.Match {
	out := make([]*simhashdbv1.Match, len(ms))
	for i, m := range ms {
		out[i] = MatchProto(m.Match)
		out[i].Similarity = &m.Similarity
	}
	return out
}

// MatchesFromProto is MatchesProto's inverse (a similarity is dropped).
func MatchesFromProto(ms []*simhashdbv1.Match) []engine.Match {
	out := make([]engine.Match, len(ms))
	for i, m := range ms {
		out[i] = engine.Match{Doc: engine.Doc{ID: m.GetId(), Fingerprint: m.GetFingerprint(), Name: m.GetName(), Sketch: string(m.GetSketch())}, Distance: int(m.GetDistance())}
	}
	return out
}

// VerifiedFromProto is VerifiedProto's inverse.
func VerifiedFromProto(ps []*simhashdbv1.Match) []textindex.Match {
	ms := MatchesFromProto(ps)
	out := make([]textindex.Match, len(ms))
	for i, m := range ms {
		out[i] = textindex.Match{Match: m, Similarity: ps[i].GetSimilarity()}
	}
	return out
}

// StatsProto is s as a message.
func StatsProto(s Stats) *simhashdbv1.StatsResponse {
	m := &simhashdbv1.StatsResponse{
		K: uint32(s.K), ExactWithin: uint32(s.ExactWithin), Documents: s.Documents, Fingerprints: s.Fingerprints, TableBytes: s.TableBytes,
		BitsPerFingerprint: s.BitsPerFingerprint, EntropyBoundBits: s.EntropyBound,
		SketchSize: uint32(s.SketchSize), BlockSize: uint32(s.BlockSize), PendingWrites: int64(s.PendingWrites),
		MemtableBytes: s.MemtableBytes, MemtableBudget: s.MemtableBudget, MemtablesMax: s.MemtablesMax, WalBytes: s.WALBytes,
		PebbleBytes: s.PebbleBytes, BytesOnDisk: s.BytesOnDisk, CacheSize: s.CacheSize, CacheBytes: s.CacheBytes,
		CacheHits: s.CacheHits, CacheMisses: s.CacheMisses, PebbleCacheHits: s.PebbleCacheHit,
		PebbleCacheBytes: s.PebbleCacheBytes, PebbleCacheSize: s.PebbleCacheSize, PebbleIndexBytes: s.PebbleIndexBytes,
		CacheSizeForPebbleIndex: s.CacheForIndex, FileReads: s.FileReads, FileReadRounds: s.FileReadRounds, ReadRing: s.ReadRing, ReadDirect: s.ReadDirect,
		ReadSubmits: s.ReadSubmits, ReadSubmitNs: int64(s.ReadSubmitTime), ReadWaitNs: int64(s.ReadWaitTime),
		Applied: s.Applied, Unmeasured: s.Unmeasured, Problem: s.Problem, BlockVersions: map[string]int64{},
	}
	if s.Design != nil {
		m.Design, _ = s.Design.MarshalBinary() // a design in use encodes
	}
	for _, t := range s.Tables {
		m.Tables = append(m.Tables, &simhashdbv1.TableStats{PrefixBits: uint32(t.Prefix), Layout: t.Layout,
			Blocks: int64(t.Blocks), Bytes: t.Bytes, Codes: int64(t.Codes), Pending: t.Pending})
	}
	for v, n := range s.BlockVersions {
		m.BlockVersions[v] = int64(n)
	}
	if sc := s.Fingerprint; sc != nil {
		m.TextSchema = &simhashdbv1.TextSchema{Shingle: uint32(sc.Shingle), Weighting: sc.Weighting, Stopwords: sc.StopWords,
			Hash: sc.Hash, Html: sc.HTML, Read: sc.Read, Pipeline: sc.Pipeline, SkipNav: sc.SkipNav, Sketch: sc.Sketch}
	}
	return m
}

// StatsFromProto is StatsProto's inverse.
func StatsFromProto(m *simhashdbv1.StatsResponse) Stats {
	s := Stats{Stats: engine.Stats{
		K: int(m.GetK()), ExactWithin: int(m.GetExactWithin()), Documents: m.GetDocuments(), Fingerprints: m.GetFingerprints(), TableBytes: m.GetTableBytes(),
		BitsPerFingerprint: m.GetBitsPerFingerprint(), EntropyBound: m.GetEntropyBoundBits(),
		SketchSize: int(m.GetSketchSize()), BlockSize: int(m.GetBlockSize()), PendingWrites: int(m.GetPendingWrites()),
		MemtableBytes: m.GetMemtableBytes(), MemtableBudget: m.GetMemtableBudget(), MemtablesMax: m.GetMemtablesMax(), WALBytes: m.GetWalBytes(),
		PebbleBytes: m.GetPebbleBytes(), BytesOnDisk: m.GetBytesOnDisk(), CacheSize: m.GetCacheSize(), CacheBytes: m.GetCacheBytes(),
		CacheHits: m.GetCacheHits(), CacheMisses: m.GetCacheMisses(), PebbleCacheHit: m.GetPebbleCacheHits(),
		PebbleCacheBytes: m.GetPebbleCacheBytes(), PebbleCacheSize: m.GetPebbleCacheSize(), PebbleIndexBytes: m.GetPebbleIndexBytes(),
		CacheForIndex: m.GetCacheSizeForPebbleIndex(), FileReads: m.GetFileReads(), FileReadRounds: m.GetFileReadRounds(), ReadRing: m.GetReadRing(), ReadDirect: m.GetReadDirect(),
		ReadSubmits: m.GetReadSubmits(), ReadSubmitTime: time.Duration(m.GetReadSubmitNs()), ReadWaitTime: time.Duration(m.GetReadWaitNs()),
		Applied: m.GetApplied(), BlockVersions: map[string]int{},
	}, Unmeasured: m.GetUnmeasured(), Problem: m.GetProblem()}
	for _, t := range m.GetTables() {
		s.Tables = append(s.Tables, engine.TableStats{Prefix: int(t.GetPrefixBits()), Layout: t.GetLayout(),
			Blocks: int(t.GetBlocks()), Bytes: t.GetBytes(), Codes: int(t.GetCodes()), Pending: t.GetPending()})
	}
	for v, n := range m.GetBlockVersions() {
		s.BlockVersions[v] = int(n)
	}
	if b := m.GetDesign(); b != nil {
		d := new(permutation.Design)
		if err := d.UnmarshalBinary(b); err != nil {
			s.Unmeasured = append(s.Unmeasured, "design")
			s.Problem = strings.TrimPrefix(s.Problem+"; ", "; ") + "the design: " + err.Error()
		} else {
			s.Design = d
		}
	}
	if sc := m.GetTextSchema(); sc != nil {
		s.Fingerprint = &textindex.Schema{Shingle: int(sc.GetShingle()), Weighting: sc.GetWeighting(), StopWords: sc.GetStopwords(),
			Hash: sc.GetHash(), HTML: sc.Html, Read: sc.GetRead(), Pipeline: sc.GetPipeline(), SkipNav: sc.GetSkipNav(), Sketch: sc.GetSketch()}
	}
	return s
}

// ErrUnavailable: a call that may succeed when tried again, on this server
// or another: a replicated index's node that cannot reach its stream, or
// has stopped applying it. The server answers it 503 with Retry-After
// (the RPC: unavailable), which the client retries when the call may be
// repeated.
var ErrUnavailable = errors.New("unavailable: try again")

// ErrNotSharded: an insert-if-new from a client that places documents
// over shards reached a server that is not a node of one of as many
// shards sharing a log, where the decision would cover its own documents
// alone. The server refuses it before deciding anything.
var ErrNotSharded = errors.New("not a shard of a log the client's shards share")

// ErrSharded: an operation a sharded index does not give, or a decision
// a shard made over its own documents alone (client.ErrSharded; a router
// in front of shards answers it too).
var ErrSharded = errors.New("client: not on a sharded index")

// ErrorKindHeader is the metadata (a header or trailer) in which an RPC's
// error names the engine's error it stands for, so that a client returns
// the same sentinel (errors.Is(err, engine.ErrNotFound)): one of the
// ErrorKinds' keys.
const ErrorKindHeader = "Simhashdb-Error"

// ErrorKinds are the engine's errors an RPC's error may stand for, by the
// name ErrorKindHeader carries.
var ErrorKinds = map[string]error{
	"not_found":   engine.ErrNotFound,
	"input":       engine.ErrInput,
	"distance":    engine.ErrDistance,
	"disk_full":   engine.ErrDiskFull,
	"read_only":   engine.ErrReadOnly,
	"closed":      engine.ErrClosed,
	"corrupt":     engine.ErrCorrupt,
	"not_sharded": ErrNotSharded,
	"sharded":     ErrSharded,
}

// ErrorKindOf is the name in ErrorKinds of the engine's error err matches
// ("input" for a malformed request too: every 400 of the server), or "".
func ErrorKindOf(err error) string {
	for _, kind := range []string{"sharded", "not_sharded", "distance", "not_found", "disk_full", "read_only", "closed", "corrupt", "input"} {
		if errors.Is(err, ErrorKinds[kind]) {
			return kind
		}
	}
	return ""
}

// Bearer is a client interceptor that sends token as the server's bearer
// token ("Authorization: Bearer <token>") with every call, unary or
// streamed.
func Bearer(token string) connect.Interceptor { return bearer(token) }

type bearer string

func (b bearer) WrapUnary(next connect.UnaryFunc) connect.UnaryFunc {
	return func(ctx context.Context, req connect.AnyRequest) (connect.AnyResponse, error) {
		req.Header().Set("Authorization", "Bearer "+string(b))
		return next(ctx, req)
	}
}

func (b bearer) WrapStreamingClient(next connect.StreamingClientFunc) connect.StreamingClientFunc {
	return func(ctx context.Context, spec connect.Spec) connect.StreamingClientConn {
		conn := next(ctx, spec)
		conn.RequestHeader().Set("Authorization", "Bearer "+string(b))
		return conn
	}
}

func (b bearer) WrapStreamingHandler(next connect.StreamingHandlerFunc) connect.StreamingHandlerFunc {
	return next
}

// CheckProto is r as a message (Ok and Problems are the caller's).
func CheckProto(r engine.CheckReport) *simhashdbv1.CheckResponse {
	return &simhashdbv1.CheckResponse{Documents: r.Documents, Postings: r.Postings, Fingerprints: r.Fingerprints,
		Blocks: r.Blocks, BlockVersions: r.BlockVersions, WalRecords: int64(r.WALRecords), Unlisted: r.Unlisted}
}

// CheckFromProto is CheckProto's inverse.
func CheckFromProto(m *simhashdbv1.CheckResponse) engine.CheckReport {
	return engine.CheckReport{Documents: m.GetDocuments(), Postings: m.GetPostings(), Fingerprints: m.GetFingerprints(),
		Blocks: m.GetBlocks(), BlockVersions: m.GetBlockVersions(), WALRecords: int(m.GetWalRecords()), Unlisted: m.GetUnlisted()}
}
