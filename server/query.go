package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/lines"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/textindex"
)

// distance returns k, or the index's K if not given.
func (s *Server) distance(k *int) (int, error) {
	if k == nil {
		return s.db.K(), nil
	}
	if *k < 0 || *k > s.db.K() {
		return 0, badRequest{matching{fmt.Sprintf(`"k" %d: the index answers distances 0 to %d`, *k, s.db.K()), engine.ErrDistance}}
	}
	return *k, nil
}

func (s *Server) getQuery(w http.ResponseWriter, r *http.Request) error {
	fp, k, latest, err := s.queryParams(r)
	if err != nil {
		return err
	}
	return s.answerQuery(w, r, fp, "", &k, nil, latest)
}

// getFingerprints answers GET /v1/fingerprints: the stored fingerprints
// within k alone, without their documents (QueryFingerprints).
func (s *Server) getFingerprints(w http.ResponseWriter, r *http.Request) error {
	fp, k, latest, err := s.queryParams(r)
	if err != nil {
		return err
	}
	if err := s.latest(r.Context(), latest); err != nil {
		return err
	}
	ns, err := s.db.QueryFingerprints(r.Context(), nil, fp, k)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.NearAnswerOf(fp, ns))
	return nil
}

// queryParams reads a GET query's parameters: ?fp=, ?k= (the index's K
// when absent) and ?latest=.
func (s *Server) queryParams(r *http.Request) (fp uint64, k int, latest bool, err error) {
	if fp, err = fpParam(r); err != nil {
		return
	}
	if k, err = s.queryK(r); err != nil {
		return
	}
	latest, err = latestParam(r)
	return
}

// fpParam reads ?fp=, a query's fingerprint.
func fpParam(r *http.Request) (uint64, error) {
	fps := r.URL.Query().Get("fp")
	if fps == "" {
		return 0, bad("want ?fp=<fingerprint>")
	}
	fp, err := simhash.Parse(fps)
	if err != nil {
		return 0, bad("fp: %v", err)
	}
	return fp, nil
}

func (s *Server) postQuery(w http.ResponseWriter, r *http.Request) error {
	var req docRequest
	if err := decodeJSON(w, r, s.opts.MaxBody, &req); err != nil {
		return err
	}
	if req.ID != nil || req.Name != "" {
		return bad(`a query has "fingerprint" or "text", and "k" and "similarity"`)
	}
	fp, sk, err := s.fingerprint(&req)
	if err != nil {
		return err
	}
	return s.answerQuery(w, r, fp, sk, req.K, req.Similarity, req.Latest != nil && *req.Latest)
}

// answerQuery answers a query of fp within k; with a sketch sk (of text
// in an index that keeps sketches), verified at the similarity asked;
// after every acknowledged write when latest.
func (s *Server) answerQuery(w http.ResponseWriter, r *http.Request, fp uint64, sk string, kp *int, sp *float64, latest bool) error {
	a, err := s.ask(r.Context(), fp, sk, kp, sp, latest)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.QueryAnswer{Query: simhash.Format(fp), Matches: matchesJSON(a)})
	return nil
}

// matchesJSON is an answer's matches as the /v1 endpoints give them.
func matchesJSON(a answer) []api.Match {
	if a.sketched {
		return verifiedOf(a.verified)
	}
	return matchesOf(a.plain)
}

func (s *Server) postInsertIfNew(w http.ResponseWriter, r *http.Request) error {
	var req docRequest
	if err := decodeJSON(w, r, s.opts.MaxBody, &req); err != nil {
		return err
	}
	if req.Latest != nil {
		return bad(`"latest" is a query's: insert-if-new always decides against every write before it`)
	}
	id, err := parseID(req.ID)
	if err != nil {
		return err
	}
	k, err := s.distance(req.K)
	if err != nil {
		return err
	}
	sim, err := s.similarity(req.Similarity)
	if err != nil {
		return err
	}
	shards := 0
	if req.Shards != nil {
		if shards = *req.Shards; shards < 0 {
			return bad(`"shards" %d: want a count of shards`, shards)
		}
	}
	req.K, req.Similarity, req.Shards = nil, nil, nil
	d, err := s.document(id, &req)
	if err != nil {
		return err
	}
	dups, inserted, err := s.insertIfNew(r.Context(), d, k, sim, shards)
	if err != nil {
		return err
	}
	ans := map[string]any{"inserted": inserted, "duplicates": matchesJSON(dups)}
	if _, n := s.sharding(); n > 1 {
		ans["shards"] = n
	}
	writeJSON(w, http.StatusOK, ans)
	return nil
}

// batchChunk is how many queries of a batch go to QueryBatch at once, so
// that answers stream while the rest is read.
const batchChunk = 10_000

// batch answers fingerprints, one a line ("<fp>" or "<qid> <fp>"), with a
// JSON line each, in order; a bad line gets {"line","error"} in its place.
// A client that goes away stops the work.
// queryK reads ?k=, the index's K when absent.
func (s *Server) queryK(r *http.Request) (int, error) {
	var kp *int
	if ks := r.URL.Query().Get("k"); ks != "" {
		k, err := strconv.Atoi(ks)
		if err != nil {
			return 0, bad("k %s: want a distance", trimmed(ks))
		}
		kp = &k
	}
	return s.distance(kp)
}

func (s *Server) batch(w http.ResponseWriter, r *http.Request) error {
	k, err := s.queryK(r)
	if err != nil {
		return err
	}
	latest, err := latestParam(r)
	if err != nil {
		return err
	}
	if err := s.latest(r.Context(), latest); err != nil {
		return err
	}
	sim, verified, err := s.querySimilarity(r)
	if err != nil {
		return err
	}
	// In an index with sketches, the lines of its export carry one: their
	// answers are verified, as the command line's batch does.
	syn := lines.Syntax{}
	if verified {
		syn.Sketch = s.db.SketchSize()
	}
	type item struct {
		fp   uint64
		qid  json.RawMessage
		sk   string
		line int
		err  string
	}
	var items []item
	var qs []uint64
	started := false
	enc := newEncoder(w)
	flush := func() error {
		if !started {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
			started = true
		}
		res := make([][]engine.Match, 0, len(qs))
		for a, err := range s.db.QueryBatch(r.Context(), qs, k) {
			if err != nil {
				return err
			}
			res = append(res, a.Matches)
		}
		j := 0
		for _, it := range items {
			var err error
			if it.err != "" {
				err = enc.Encode(lineError{it.line, it.err})
			} else {
				a := api.QueryAnswer{Query: simhash.Format(it.fp), QID: it.qid, Matches: matchesOf(res[j])}
				if it.sk != "" {
					a.Matches = verifiedOf(textindex.Verify(res[j], it.sk, sim))
				}
				err = enc.Encode(a)
				j++
			}
			if err != nil {
				return err // the client went away
			}
		}
		if f, ok := w.(http.Flusher); ok {
			f.Flush()
		}
		items, qs = items[:0], qs[:0]
		return nil
	}
	err = s.bodyLines(w, r, func(n int, line []byte) error {
		it := item{line: n}
		qid, fp, err := syn.Query(string(line), n)
		if syn.Sketch > 0 {
			if id, rfp, sk, _, rerr := syn.SketchedRecord(string(line)); rerr == nil {
				qid, fp, it.sk, err = json.RawMessage(strconv.FormatUint(id, 10)), rfp, sk, nil
			}
		}
		if err != nil {
			it.err = err.Error()
		} else {
			it.qid, it.fp = qid, fp
			qs = append(qs, fp)
		}
		items = append(items, it)
		if len(qs) >= batchChunk {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil && started {
		// The status is sent: end the stream with the error.
		msg := err.Error()
		if statusOf(err) == http.StatusInternalServerError {
			s.opts.Logger.Error("simhashdb server: batch failed", "err", err)
			msg = "internal error"
		}
		enc.Encode(map[string]string{"error": msg})
		return nil
	}
	return err
}

// latestParam is the query parameter "latest": whether the answer must
// see every write acknowledged before the request (in a replicated index;
// one index always does).
func latestParam(r *http.Request) (bool, error) {
	v := r.URL.Query().Get("latest")
	if v == "" {
		return false, nil
	}
	b, err := strconv.ParseBool(v)
	if err != nil {
		return false, bad("latest %s: want true or false", trimmed(v))
	}
	return b, nil
}
