package server

import (
	"errors"
	"iter"
	"net/http"
	"strconv"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/textindex"
)

// The whole-corpus endpoints: a served index answers what an opened one
// does (export, find-all, find-clusters, check), each streamed as JSON
// lines as the engine finds them.

// streamed answers the JSON lines of seq, each made by line. An error
// before the first line is the answer's status; after it (the status is
// sent), a last line {"error": ...} ends the stream.
func streamed[T any](s *Server, w http.ResponseWriter, seq iter.Seq2[T, error], line func(T) any) error {
	enc := newEncoder(w)
	started := false
	flusher, _ := w.(http.Flusher)
	n := 0
	for v, err := range seq {
		if err != nil {
			if !started {
				return err
			}
			msg := err.Error()
			if statusOf(err) == http.StatusInternalServerError && !errors.Is(err, engine.ErrCorrupt) {
				s.opts.Logger.Error("simhashdb server: stream failed", "err", err)
				msg = "internal error"
			}
			enc.Encode(map[string]string{"error": msg})
			return nil
		}
		if !started {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		if err := enc.Encode(line(v)); err != nil {
			return nil // the client is gone
		}
		if n++; n%1024 == 0 && flusher != nil {
			flusher.Flush()
		}
	}
	if !started {
		w.Header().Set("Content-Type", "application/x-ndjson")
		w.WriteHeader(http.StatusOK)
	}
	return nil
}

func (s *Server) export(w http.ResponseWriter, r *http.Request) error {
	return streamed(s, w, s.db.Docs(r.Context()), func(d engine.Doc) any { return api.DocOf(d) })
}

// querySimilarity reads ?similarity=: in an index with sketches, the
// default when absent, and ok true; ok is false for an index without.
func (s *Server) querySimilarity(r *http.Request) (sim float64, ok bool, err error) {
	var sp *float64
	if v := r.URL.Query().Get("similarity"); v != "" {
		f, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return 0, false, bad("similarity %s: want a number from 0 to 1", trimmed(v))
		}
		sp = &f
	}
	sim, err = s.similarity(sp)
	return sim, err == nil && textindex.Sketched(s.db), err
}

func (s *Server) pairs(w http.ResponseWriter, r *http.Request) error {
	k, err := s.queryK(r)
	if err != nil {
		return err
	}
	sim, verified, err := s.querySimilarity(r)
	if err != nil {
		return err
	}
	if verified {
		return streamed(s, w, textindex.Pairs(r.Context(), s.db, k, sim), func(p textindex.Pair) any {
			return api.Pair{A: api.DocOf(p.A), B: api.DocOf(p.B), Distance: p.Distance, Similarity: &p.Similarity}
		})
	}
	return streamed(s, w, s.db.FindAll(r.Context(), k), func(p engine.Pair) any {
		return api.Pair{A: api.DocOf(p.A), B: api.DocOf(p.B), Distance: p.Distance}
	})
}

func (s *Server) clusters(w http.ResponseWriter, r *http.Request) error {
	k, err := s.queryK(r)
	if err != nil {
		return err
	}
	sim, verified, err := s.querySimilarity(r)
	if err != nil {
		return err
	}
	method := r.URL.Query().Get("method")
	if method != "" && method != "components" && method != "star" {
		return bad("method %s: want components or star", trimmed(method))
	}
	seq := s.clusterSeq(r.Context(), k, sim, verified, method == "star")
	return streamed(s, w, seq, func(docs []engine.Doc) any { return api.ClusterOf(docs) })
}

// checkJSON is the answer to POST /v1/check.
type checkJSON struct {
	OK     bool               `json:"ok"`
	Report engine.CheckReport `json:"report"`
	// Problems is Check's error: every problem found, with its place.
	Problems string `json:"problems,omitempty"`
}

func (s *Server) check(w http.ResponseWriter, r *http.Request) error {
	rep, err := s.db.Check(r.Context())
	if err != nil && !errors.Is(err, engine.ErrCorrupt) {
		return err
	}
	ans := checkJSON{OK: err == nil, Report: rep}
	if err != nil {
		ans.Problems = err.Error()
	}
	writeJSON(w, http.StatusOK, ans)
	return nil
}
