// Package server serves an open simhashdb index over HTTP with JSON, so
// that many clients, in any language, share one index: the handler behind
// "simhashdb serve". It authenticates with a bearer token, bounds every
// input, and exports Prometheus metrics.
//
// Endpoints (fingerprints in JSON are strings, "0x" hex or decimal: JSON
// numbers lose precision past 2^53):
//
//	PUT    /v1/documents/{id}   {"fingerprint"|"text", "name"}: store one document
//	POST   /v1/documents        JSON lines of {"id", "fingerprint"|"text", "name"}
//	GET    /v1/documents/{id}   the document
//	DELETE /v1/documents/{id}   remove it
//	GET    /v1/query?fp=..&k=.. the documents within k, nearest first
//	POST   /v1/query            {"fingerprint"|"text", "k"}
//	GET    /v1/fingerprints?fp=..&k=.. the stored fingerprints within k alone, nearest first
//	POST   /v1/insert-if-new    {"id", "fingerprint"|"text", "name", "k", "shards"}: the crawler's decision
//	POST   /v1/batch?k=..       fingerprints, one a line ("<fp>" or "<qid> <fp>"); JSON lines out, streamed
//	GET    /v1/stats            the index's statistics
//	GET    /v1/export           every document, JSON lines, streamed
//	GET    /v1/pairs?k=..       every pair within k (find-all), JSON lines, streamed
//	GET    /v1/clusters?k=..&method=components|star  the clusters, JSON lines, streamed
//	POST   /v1/check            Check: {"ok", "report", "problems"}
//	GET    /v1/snapshot         a checkpoint of the index, a tar (a replica's new node starts from it)
//	GET    /healthz             "ok" (no token needed)
//	GET    /metrics             Prometheus text format
//
// The same API, defined once in proto/simhashdb/v1/index.proto, is served
// on the same handler as gRPC, gRPC-Web and Connect (connect-go; Go code in
// package gen/simhashdb/v1), with server reflection.
//
// Writes answer once they are durable as the index's sync mode says.
package server

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/internal/quote"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/textindex"
)

// Options configure a Server. The zero value is usable: no token (so
// serve on loopback only), default limits.
type Options struct {
	// Token, if set, is required as "Authorization: Bearer <token>" on
	// every endpoint but /healthz.
	Token string
	// MaxBody bounds a request body in bytes (default 1 MiB); MaxBatchBody
	// bounds those of POST /v1/documents and /v1/batch (default 64 MiB).
	MaxBody, MaxBatchBody int64
	// MaxBatch bounds the lines of one POST /v1/documents or /v1/batch
	// (default 100,000).
	MaxBatch int
	// MaxInflight bounds the bytes of batch bodies (POST /v1/documents,
	// /v1/batch) read at once, each counted at its declared length or, if
	// it declares none, at MaxBatchBody: further batches wait for room,
	// and get 503 if their client gives up first (default 256 MiB, at
	// least MaxBatchBody). The server's memory grows with it.
	MaxInflight int64
	// MaxWait bounds the time a batch waits for room among the bytes in
	// flight before it is answered 503 with Retry-After (default 30 s).
	// It should be well under the http.Server's ReadTimeout, which runs
	// while the request waits.
	MaxWait time.Duration
	// MaxHeader bounds a request's header in bytes (default 64 KiB): 431.
	// An http.Server in front should allow more (MaxHeaderBytes), so that
	// this JSON answer is the one a client gets.
	MaxHeader int
	// Fingerprinter fingerprints "text" (the index's options); nil refuses
	// text. In an index that keeps sketches (package textindex), text is
	// sketched too, and answers about it are verified: each match carries
	// its "similarity", and only those from "similarity" (default
	// textindex.DefaultSimilarity) on are given.
	Fingerprinter *simhash.Fingerprinter
	// TextReading is how "text" is read (simhash.Document): by its
	// content (ReadAuto), as plain text or as HTML. Text that is binary
	// or has no words is refused.
	TextReading simhash.Reading
	// Logger receives errors the clients are not told of (nil: none).
	Logger *slog.Logger
	// Writes, if set, takes the server's writes instead of the index: a
	// node of a replicated index (package replica) whose DB is the one
	// served.
	Writes Writes
}

// Defaults of Options.
const (
	DefaultMaxBody      = 1 << 20
	DefaultMaxBatchBody = 64 << 20
	DefaultMaxBatch     = 100_000
	DefaultMaxInflight  = 256 << 20
	DefaultMaxHeader    = 64 << 10
	DefaultMaxWait      = 30 * time.Second
)

// Server is the HTTP handler of one open index.
type Server struct {
	db       *engine.DB
	writes   Writes
	text     *textindex.Reader // nil: text is refused
	opts     Options
	mux      *http.ServeMux
	metrics  *metrics
	inflight *inflight
	// settingMu makes SetSetting's look and write one step.
	settingMu sync.Mutex
	// snapshotMu lets one snapshot be written at a time.
	snapshotMu sync.Mutex
}

// New returns a Server for db, which the caller opens and closes.
func New(db *engine.DB, opts Options) *Server {
	opts = opts.withDefaults()
	s := &Server{db: db, writes: opts.Writes, opts: opts, mux: http.NewServeMux(), inflight: newInflight(opts.MaxInflight)}
	if s.writes == nil {
		s.writes = local{db}
	}
	if opts.Fingerprinter != nil {
		// An index of sketches this build does not make is read without
		// them: its writes of text are then refused by the engine, by size.
		var err error
		if s.text, err = textindex.NewReader(opts.Fingerprinter, opts.TextReading, db.SketchSize()); err != nil {
			s.text, _ = textindex.NewReader(opts.Fingerprinter, opts.TextReading, 0)
		}
	}
	batchBody := func() int64 { return s.opts.MaxBatchBody }
	s.metrics = newMetrics(db, s.writes)
	s.route("PUT /v1/documents/{id}", "put", s.putDocument)
	s.route("POST /v1/documents", "post_documents", s.withInflight(batchBody, s.postDocuments))
	s.route("GET /v1/documents/{id}", "get", s.getDocument)
	s.route("DELETE /v1/documents/{id}", "delete", s.deleteDocument)
	s.route("GET /v1/query", "query", s.getQuery)
	s.route("POST /v1/query", "query", s.postQuery)
	s.route("GET /v1/fingerprints", "query_fingerprints", s.getFingerprints)
	s.route("POST /v1/insert-if-new", "insert_if_new", s.postInsertIfNew)
	s.route("POST /v1/batch", "batch", s.withInflight(batchBody, s.batch))
	s.route("GET /v1/stats", "stats", s.stats)
	s.route("GET /v1/export", "export", s.export)
	s.route("GET /v1/pairs", "pairs", s.pairs)
	s.route("GET /v1/clusters", "clusters", s.clusters)
	s.route("POST /v1/check", "check", s.check)
	s.route("GET /v1/snapshot", "snapshot", s.snapshot)
	s.routeHealth()
	s.routeRPC(rpcService{s})
	return s
}

// routeHealth registers /healthz (open) and /metrics (behind the token).
func (s *Server) routeHealth() {
	s.mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, "ok")
	})
	s.mux.Handle("GET /metrics", s.authenticated(s.metrics.handler()))
}

// withDefaults is o with its zero limits set to their defaults.
func (opts Options) withDefaults() Options {
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.MaxBatchBody <= 0 {
		opts.MaxBatchBody = DefaultMaxBatchBody
	}
	if opts.MaxBatch <= 0 {
		opts.MaxBatch = DefaultMaxBatch
	}
	if opts.MaxInflight <= 0 {
		opts.MaxInflight = DefaultMaxInflight
	}
	opts.MaxInflight = max(opts.MaxInflight, opts.MaxBatchBody)
	if opts.MaxWait <= 0 {
		opts.MaxWait = DefaultMaxWait
	}
	if opts.MaxHeader <= 0 {
		opts.MaxHeader = DefaultMaxHeader
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	return opts
}

// ServeHTTP serves the API. Every answer but /healthz's and /metrics' is
// JSON, the router's 404 and 405 included.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if n := headerBytes(r); n > s.opts.MaxHeader {
		writeError(w, http.StatusRequestHeaderFieldsTooLarge, fmt.Errorf("request header of about %d bytes, at most %d", n, s.opts.MaxHeader))
		return
	}
	if p := r.URL.Path; p != "" && path.Clean(p) != p && path.Clean(p)+"/" != p {
		// The router would redirect to the cleaned path: a client that
		// sent one is refused as a bad id is, not sent elsewhere.
		writeError(w, http.StatusBadRequest, fmt.Errorf("path %q is not clean (\"..\", \".\" or \"//\" in it): send %q", p, path.Clean(p)))
		return
	}
	if _, pattern := s.mux.Handler(r); pattern == "" {
		w = &jsonErrors{ResponseWriter: w}
	}
	s.mux.ServeHTTP(w, r)
}

// handlerFunc is an endpoint: it returns the error to answer with, if it
// has not answered.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// route registers an endpoint behind authentication, metrics, and the
// translation of errors into JSON answers.
func (s *Server) route(pattern, name string, h handlerFunc) {
	s.mux.Handle(pattern, s.authenticated(s.metrics.instrument(name, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if p := recover(); p != nil {
				s.opts.Logger.Error("simhashdb server: panic", "endpoint", name, "panic", p)
				writeError(w, http.StatusInternalServerError, errors.New("internal error"))
			}
		}()
		if err := h(w, r); err != nil {
			var mb *http.MaxBytesError
			if errors.As(err, &mb) {
				flag := "--max-body"
				if mb.Limit == s.opts.MaxBatchBody {
					flag = "--max-batch-body"
				}
				err = fmt.Errorf("%w: the body is over the server's limit of %d bytes (%s)", err, mb.Limit, flag)
			}
			status := statusOf(err)
			if status == http.StatusInternalServerError {
				s.opts.Logger.Error("simhashdb server: request failed", "endpoint", name, "err", err)
			}
			writeError(w, status, err)
		}
	}))))
}

// authenticated requires the token, if there is one.
func (s *Server) authenticated(h http.Handler) http.Handler {
	if s.opts.Token == "" {
		return h
	}
	want := []byte(s.opts.Token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The scheme is case-insensitive (RFC 9110), the token is not.
		scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimLeft(token, " ")), want) != 1 {
			s.metrics.unauthorized.Inc()
			w.Header().Set("WWW-Authenticate", `Bearer realm="simhashdb"`)
			writeError(w, http.StatusUnauthorized, errors.New("unauthorized"))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// badRequest marks an error as the client's.
type badRequest struct{ err error }

func (e badRequest) Error() string { return e.err.Error() }
func (e badRequest) Unwrap() error { return e.err }

// matching is an error with its own message that matches err (an
// engine's sentinel, which the RPC's clients get back).
type matching struct {
	msg string
	err error
}

func (e matching) Error() string { return e.msg }
func (e matching) Unwrap() error { return e.err }

func bad(format string, args ...any) error { return badRequest{fmt.Errorf(format, args...)} }

// statusOf maps an error to its HTTP status.
func statusOf(err error) int {
	var br badRequest
	var mb *http.MaxBytesError
	switch {
	case errors.As(err, &mb):
		return http.StatusRequestEntityTooLarge
	case errors.As(err, new(timeout)):
		return http.StatusRequestTimeout
	case errors.As(err, new(busy)), errors.Is(err, api.ErrUnavailable):
		return http.StatusServiceUnavailable
	case errors.Is(err, engine.ErrDiskFull):
		return http.StatusInsufficientStorage
	case errors.As(err, &br), errors.Is(err, engine.ErrDistance), errors.Is(err, engine.ErrInput):
		return http.StatusBadRequest
	case errors.Is(err, engine.ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, engine.ErrReadOnly):
		return http.StatusForbidden
	case errors.Is(err, engine.ErrClosed):
		return http.StatusServiceUnavailable
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

// writeError answers {"error": "..."}; a server error says no more than
// that it is one.
func writeError(w http.ResponseWriter, status int, err error) {
	msg := err.Error()
	switch status {
	case http.StatusInternalServerError:
		msg = "internal error"
	case http.StatusInsufficientStorage:
		msg = "disk full: the index's disk has no room for more writes; queries still work. Free space, then retry"
		w.Header().Set("Retry-After", "60")
	case http.StatusServiceUnavailable:
		w.Header().Set("Retry-After", "5")
	}
	writeJSON(w, status, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	newEncoder(w).Encode(v)
}

// timeSince is for the metrics' latencies.
func timeSince(t time.Time) float64 { return time.Since(t).Seconds() }

// trimmed quotes s for an error message, cut to its first 60 bytes.
func trimmed(s string) string { return quote.Short(s, 60) }

// newEncoder writes JSON as it is: no escaping of <, > and & (the answers
// are not HTML).
func newEncoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}
