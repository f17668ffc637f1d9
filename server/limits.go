package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"time"

	"golang.org/x/sync/semaphore"
)

// This file holds the limits that keep a server's memory and answers in
// bounds whatever its clients send: the body bytes in flight, the header
// size, and the JSON answers to what the router refuses.

// inflight bounds the bytes of large request bodies being read at once:
// a batch body is held while its lines are parsed and stored, so without a
// bound the memory grows with the number of concurrent batches.
type inflight struct {
	sem   *semaphore.Weighted
	limit int64
}

func newInflight(limit int64) *inflight {
	return &inflight{sem: semaphore.NewWeighted(limit), limit: limit}
}

// acquire waits until a body of the request's declared length (or of
// limit when it declares none) may be read, at most wait, and returns the
// function that releases it. limit is the endpoint's.
func (f *inflight) acquire(r *http.Request, limit int64, wait time.Duration) (func(), error) {
	n := limit
	if r.ContentLength >= 0 && r.ContentLength < limit {
		n = r.ContentLength
	}
	n = min(max(n, 1), f.limit)
	ctx, cancel := context.WithTimeout(r.Context(), wait)
	defer cancel()
	if err := f.sem.Acquire(ctx, n); err != nil {
		return nil, busy{fmt.Errorf("the server is reading %d bytes of request bodies, its limit (--max-inflight-bytes), and found no room for this one in %v; retry later: %w", f.limit, wait, err)}
	}
	return func() { f.sem.Release(n) }, nil
}

// busy is an error that a client may retry later: 503 with Retry-After.
type busy struct{ err error }

func (e busy) Error() string { return e.err.Error() }
func (e busy) Unwrap() error { return e.err }

// timeout is a request body not read in time: 408.
type timeout struct{ err error }

func (e timeout) Error() string { return e.err.Error() }
func (e timeout) Unwrap() error { return e.err }

// isTimeout reports whether err is a read deadline that passed.
func isTimeout(err error) bool {
	var ne interface{ Timeout() bool }
	return errors.Is(err, os.ErrDeadlineExceeded) || errors.As(err, &ne) && ne.Timeout()
}

// headerBytes is the size of r's header as the client sent it, near enough.
func headerBytes(r *http.Request) int {
	n := len(r.Method) + len(r.RequestURI) + 12
	for k, vs := range r.Header {
		for _, v := range vs {
			n += len(k) + len(v) + 4
		}
	}
	return n
}

// jsonErrors makes the router's own answers (404, 405) JSON like the
// others: it writes {"error": "<status text>"} in place of a plain-text
// error body.
type jsonErrors struct {
	http.ResponseWriter
	swallow bool
}

func (w *jsonErrors) WriteHeader(code int) {
	if code >= 400 && strings.HasPrefix(w.Header().Get("Content-Type"), "text/plain") {
		w.Header().Del("X-Content-Type-Options")
		w.Header().Set("Content-Type", "application/json")
		w.ResponseWriter.WriteHeader(code)
		msg := strings.ToLower(http.StatusText(code))
		if code == http.StatusMethodNotAllowed {
			msg += ": this path takes " + w.Header().Get("Allow")
		}
		json.NewEncoder(w.ResponseWriter).Encode(map[string]string{"error": msg})
		w.swallow = true
		return
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *jsonErrors) Write(b []byte) (int, error) {
	if w.swallow {
		return len(b), nil
	}
	return w.ResponseWriter.Write(b)
}

// withInflight runs h with a large body's bytes counted in flight. A
// request that finds no room within MaxWait is answered 503 with
// Retry-After, its body read and dropped first (unless the client waits
// for "100 Continue" before sending it), so that the client, still
// sending, gets the answer rather than a connection cut under it.
func (s *Server) withInflight(limit func() int64, h handlerFunc) handlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		release, err := s.inflight.acquire(r, limit(), s.opts.MaxWait)
		if err != nil {
			if !strings.EqualFold(r.Header.Get("Expect"), "100-continue") {
				io.Copy(io.Discard, http.MaxBytesReader(w, r.Body, limit()))
			}
			w.Header().Set("Connection", "close")
			return err
		}
		defer release()
		return h(w, r)
	}
}
