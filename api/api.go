// Package api holds the wire shapes of simhashdb's served API, one home
// for each: the JSON of the /v1 endpoints (what `simhashdb serve`
// answers and what the command line prints for the same documents:
// find-all --db, find-clusters --db), and the conversions between the
// engine's types and the RPC's messages (proto/simhashdb/v1), with the
// names of the engine's errors an RPC carries, which the server sends and
// package client reads.
//
// Fingerprints are strings ("0x" and 16 hex digits): JSON numbers lose
// precision past 2^53.
package api

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/internal/quote"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/textindex"
)

// Doc is a document.
type Doc struct {
	ID   uint64 `json:"id"`
	Name string `json:"name"`
	FP   string `json:"fp"`
	// Sketch is the document's sketch in hex, in an index that keeps them.
	Sketch string `json:"sketch,omitempty"`
}

// DocOf is d in JSON.
func DocOf(d engine.Doc) Doc {
	return Doc{d.ID, d.Name, simhash.Format(d.Fingerprint), hex.EncodeToString([]byte(d.Sketch))}
}

// Engine is DocOf's inverse; an error names the document and its field.
func (j Doc) Engine() (engine.Doc, error) {
	fp, err := simhash.Parse(j.FP)
	if err != nil {
		return engine.Doc{}, fmt.Errorf("document %d: %w", j.ID, err)
	}
	sk, err := hex.DecodeString(j.Sketch)
	if err != nil {
		return engine.Doc{}, fmt.Errorf("document %d: sketch %s: want hexadecimal digits", j.ID, quote.Short(j.Sketch, 60))
	}
	return engine.Doc{ID: j.ID, Fingerprint: fp, Name: j.Name, Sketch: string(sk)}, nil
}

// Match is a document a query found.
type Match struct {
	Doc
	Distance int `json:"distance"`
	// Similarity is the estimated Jaccard similarity of the texts, in an
	// answer about text verified by sketches.
	Similarity *float64 `json:"similarity,omitempty"`
}

// MatchOf is m in JSON: its document without its sketch (a query's answer
// names documents; export gives their sketches).
func MatchOf(m engine.Match, similarity *float64) Match {
	d := DocOf(m.Doc)
	d.Sketch = ""
	return Match{d, m.Distance, similarity}
}

// Engine is MatchOf's inverse.
func (m Match) Engine() (engine.Match, error) {
	d, err := m.Doc.Engine()
	return engine.Match{Doc: d, Distance: m.Distance}, err
}

// QueryAnswer is the answer to a query, and a line of a batch's.
type QueryAnswer struct {
	Query   string          `json:"query"`
	QID     json.RawMessage `json:"qid,omitempty"`
	Matches []Match         `json:"matches"`
}

// NearAnswer is the stored fingerprints within k of a query alone,
// nearest first, then ascending: the answer to GET /v1/fingerprints and
// query --fingerprints --json's line.
type NearAnswer struct {
	Query        string `json:"query"`
	Fingerprints []Near `json:"fingerprints"`
}

// Near is a stored fingerprint within distance of a query.
type Near struct {
	FP       string `json:"fp"`
	Distance int    `json:"distance"`
}

// NearAnswerOf is the answer ns to a query of q in JSON.
func NearAnswerOf(q uint64, ns []engine.Near) NearAnswer {
	a := NearAnswer{Query: simhash.Format(q), Fingerprints: make([]Near, len(ns))}
	for i, n := range ns {
		a.Fingerprints[i] = Near{FP: simhash.Format(n.Fingerprint), Distance: n.Distance}
	}
	return a
}

// Pair is two documents within the distance asked: a line of GET
// /v1/pairs and of find-all --db.
type Pair struct {
	A        Doc `json:"a"`
	B        Doc `json:"b"`
	Distance int `json:"distance"`
	// Similarity is the pair's estimated Jaccard similarity, in an index
	// that keeps sketches.
	Similarity *float64 `json:"similarity,omitempty"`
}

// Cluster is a group of documents: a line of GET /v1/clusters and of
// find-clusters --db.
type Cluster struct {
	Size      int   `json:"size"`
	Documents []Doc `json:"documents"`
}

// ClusterOf is docs in JSON.
func ClusterOf(docs []engine.Doc) Cluster {
	c := Cluster{Size: len(docs), Documents: make([]Doc, len(docs))}
	for i, d := range docs {
		c.Documents[i] = DocOf(d)
	}
	return c
}

// Error is the body of every error answer, and the last line of a
// streamed answer that failed part way.
type Error struct {
	Error string `json:"error"`
}

// Stats is the index's statistics (GET /v1/stats, stats --json): the
// engine's, the text options of an index that keeps them, and the figures
// the index could not give (an *engine.StatsError's fields and reason).
type Stats struct {
	engine.Stats
	Fingerprint *textindex.Schema `json:"fingerprint,omitempty"`
	// MinSimilarity is the lowest similarity a text index whose records
	// carry band keys finds pairs for (textindex.MinSimilarity).
	MinSimilarity *float64 `json:"min_similarity,omitempty"`
	Unmeasured    []string `json:"unmeasured,omitempty"`
	Problem       string   `json:"problem,omitempty"`
}

// StatsOf is st with its schema (nil: none kept) and Stats' error, which
// is a *engine.StatsError or nil: it returns any other error.
func StatsOf(st engine.Stats, schema *textindex.Schema, err error) (Stats, error) {
	out := Stats{Stats: st, Fingerprint: schema}
	if m, ok := textindex.MinSimilarityOfSize(st.SketchSize); ok {
		out.MinSimilarity = &m
	}
	if se, ok := errors.AsType[*engine.StatsError](err); ok {
		out.Unmeasured, out.Problem = se.Fields, se.Err.Error()
	} else if err != nil {
		return Stats{}, err
	}
	return out, nil
}

// Err is the *engine.StatsError s carries, or nil.
func (s Stats) Err() error {
	if len(s.Unmeasured) == 0 {
		return nil
	}
	return &engine.StatsError{Fields: s.Unmeasured, Err: errors.New(s.Problem)}
}
