package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/simhashdb/simhashdb/api"
	"github.com/simhashdb/simhashdb/engine"
	"github.com/simhashdb/simhashdb/simhash"
	"github.com/simhashdb/simhashdb/textindex"
	"github.com/simhashdb/simhashdb/textindex/naming"
)

// verifiedOf is matchesOf for matches verified by their sketches.
func verifiedOf(ms []textindex.Match) []api.Match {
	out := make([]api.Match, len(ms))
	for i, m := range ms {
		out[i] = api.MatchOf(engine.Match{Doc: m.Doc, Distance: m.Distance}, &ms[i].Similarity)
	}
	return out
}

func matchesOf(ms []engine.Match) []api.Match {
	out := make([]api.Match, len(ms))
	for i, m := range ms {
		out[i] = api.MatchOf(m, nil)
	}
	return out
}

// docRequest is a document or query in a request: a fingerprint or a text.
type docRequest struct {
	ID          json.RawMessage `json:"id"`
	Fingerprint json.RawMessage `json:"fingerprint"`
	Text        *string         `json:"text"`
	// Sketch goes with "fingerprint" into an index that keeps sketches:
	// hex, as export gives it.
	Sketch     *string  `json:"sketch"`
	Name       string   `json:"name"`
	K          *int     `json:"k"`
	Similarity *float64 `json:"similarity"`
	// Latest asks a query to see every write acknowledged before it.
	Latest *bool `json:"latest"`
	// Shards is an insert-if-new's: the shards its client places
	// documents over (Server.insertIfNew).
	Shards *int `json:"shards"`
}

// decodeJSON reads one JSON object of at most limit bytes into v, refusing
// fields v does not have and anything after it.
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, limit))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return requestErr(err)
	}
	if dec.More() {
		return bad("the body holds more than one JSON value")
	}
	return nil
}

// requestErr makes a decoding error the client's (a body over its limit
// stays itself: 413).
func requestErr(err error) error {
	var mb *http.MaxBytesError
	if errors.As(err, &mb) {
		return err
	}
	var ute *json.UnmarshalTypeError
	if errors.As(err, &ute) {
		// Said in the API's words, not Go's (type and struct names).
		return bad("malformed JSON: %q: want %s, got %s", ute.Field, jsonKind(ute.Type.Kind()), ute.Value)
	}
	if isTimeout(err) {
		return timeout{fmt.Errorf("the request body was not read in time (the server's --read-timeout): %w", err)}
	}
	if errors.Is(err, io.EOF) {
		return bad("empty body: want a JSON object")
	}
	return bad("malformed JSON: %v", err)
}

// jsonKind names a Go kind as JSON does.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int64, reflect.Uint64, reflect.Float64:
		return "a number"
	case reflect.Slice:
		return "an array"
	case reflect.Struct, reflect.Map:
		return "an object"
	}
	return "another type"
}

// fingerprint returns the request's fingerprint and sketch: those given,
// or its text's.
func (s *Server) fingerprint(req *docRequest) (uint64, string, error) {
	switch {
	case req.Fingerprint != nil && req.Text != nil:
		return 0, "", bad(`give "fingerprint" or "text", not both`)
	case req.Sketch != nil && req.Fingerprint == nil:
		return 0, "", bad(`"sketch" goes with "fingerprint"`)
	case req.Fingerprint != nil:
		var str string
		if err := json.Unmarshal(req.Fingerprint, &str); err != nil {
			return 0, "", bad(`"fingerprint": want a string ("0x" and hex digits, or decimal): JSON numbers lose precision past 2^53`)
		}
		fp, err := simhash.Parse(str)
		if err != nil {
			return 0, "", bad(`"fingerprint": %v`, err)
		}
		var sk []byte
		if req.Sketch != nil && s.db.SketchSize() > 0 { // none kept: content says so
			if sk, err = hex.DecodeString(*req.Sketch); err != nil {
				return 0, "", bad(`"sketch" %s: want %d hexadecimal digits, the sketch this index keeps`, trimmed(*req.Sketch), 2*s.db.SketchSize())
			}
		}
		return s.content(&fp, sk, req.Sketch != nil, nil)
	case req.Text != nil:
		return s.content(nil, nil, false, req.Text)
	}
	return 0, "", bad(`want "fingerprint" or "text"`)
}

// content returns the fingerprint and sketch of a document or a query,
// whichever API it came by: the fingerprint given, with its sketch if
// withSketch, or the fingerprint and sketch of text.
func (s *Server) content(fp *uint64, sk []byte, withSketch bool, text *string) (uint64, string, error) {
	if text != nil {
		if s.text == nil {
			return 0, "", bad(`"text" is not served: send "fingerprint"`)
		}
		fp, sk, err := s.text.Read(strings.NewReader(*text))
		if err != nil {
			return 0, "", bad(`"text": %v`, err)
		}
		return fp, sk, nil
	}
	if withSketch {
		if s.db.SketchSize() == 0 {
			return 0, "", bad(`"sketch": this index keeps no sketches`)
		}
		if len(sk) != s.db.SketchSize() {
			return 0, "", bad(`"sketch" of %d bytes: want %d, the sketch this index keeps`, len(sk), s.db.SketchSize())
		}
	}
	return *fp, string(sk), nil
}

// similarity returns a request's "similarity", the default if absent; it
// is refused for an index without sketches.
func (s *Server) similarity(sp *float64) (float64, error) {
	if sp == nil {
		return textindex.DefaultSimilarity, nil
	}
	if !textindex.Sketched(s.db) {
		return 0, bad(`"similarity": this index keeps no sketches of text: it answers by distance ("k")`)
	}
	if !(*sp >= 0 && *sp <= 1) {
		return 0, bad(`"similarity" %v: want 0 to 1`, *sp)
	}
	if err := textindex.CheckSimilarity(s.db.SketchSize(), *sp); err != nil {
		return 0, bad(`"similarity": %v`, err)
	}
	return *sp, nil
}

// parseID reads a document id: a JSON number, or a string of one.
func parseID(raw json.RawMessage) (uint64, error) {
	if raw == nil {
		return 0, bad(`want "id"`)
	}
	s := string(raw)
	if len(s) >= 2 && s[0] == '"' {
		if err := json.Unmarshal(raw, &s); err != nil {
			return 0, bad(`"id": %v`, err)
		}
	}
	id, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, bad(`"id" %s: want an unsigned integer below 2^64`, trimmed(s))
	}
	return id, nil
}

// pathID reads the {id} of the path.
func pathID(r *http.Request) (uint64, error) {
	id, err := strconv.ParseUint(r.PathValue("id"), 10, 64)
	if err != nil {
		return 0, bad("document id %s: want an unsigned integer below 2^64", trimmed(r.PathValue("id")))
	}
	return id, nil
}

// document checks a document of a request.
func (s *Server) document(id uint64, req *docRequest) (engine.Doc, error) {
	if req.K != nil || req.Similarity != nil || req.Latest != nil || req.Shards != nil {
		return engine.Doc{}, bad(`"k", "similarity", "latest" and "shards" do not belong to a document`)
	}
	fp, sk, err := s.fingerprint(req)
	if err != nil {
		return engine.Doc{}, err
	}
	if len(req.Name) > engine.MaxName {
		return engine.Doc{}, bad(`"name" of %d bytes, at most %d`, len(req.Name), engine.MaxName)
	}
	return engine.Doc{ID: id, Fingerprint: fp, Name: req.Name, Sketch: sk}, nil
}

func (s *Server) putDocument(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	var req docRequest
	if err := decodeJSON(w, r, s.opts.MaxBody, &req); err != nil {
		return err
	}
	if req.ID != nil {
		if bid, err := parseID(req.ID); err != nil || bid != id {
			return bad(`"id" in the body differs from the path's %d`, id)
		}
	}
	d, err := s.document(id, &req)
	if err != nil {
		return err
	}
	if err := s.writes.Write(r.Context(), engine.Commit{Insert: []engine.Doc{d}}); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.DocOf(d))
	return nil
}

// lineError is a bad line of a body of lines.
type lineError struct {
	Line  int    `json:"line"`
	Error string `json:"error"`
}

// maxLineErrors bounds the bad lines an answer lists (it counts them all).
const maxLineErrors = 100

// bodyLines calls fn with each line of a request body of lines (blank
// lines and "#" comments skipped), at most MaxBatch of them and
// MaxBatchBody bytes. The whole body is read before the first call, so
// that a body over a limit is refused (400, 413) before any work starts:
// its bytes are counted among those in flight.
func (s *Server) bodyLines(w http.ResponseWriter, r *http.Request, fn func(n int, line []byte) error) error {
	type numbered struct {
		n    int
		line []byte
	}
	var lines []numbered
	err := s.streamLines(w, r, func(n int, line []byte) error {
		lines = append(lines, numbered{n, bytes.Clone(line)})
		return nil
	})
	if err != nil {
		return err
	}
	for _, l := range lines {
		if err := fn(l.n, l.line); err != nil {
			return err
		}
	}
	return nil
}

// streamLines is bodyLines for a handler that does nothing lasting before
// the body ends (POST /v1/documents commits once, at the end): fn sees
// each line as it is read, valid until it returns, so that the body is
// never held whole beside what is made of it. A limit passed fails the
// request part way.
func (s *Server) streamLines(w http.ResponseWriter, r *http.Request, fn func(n int, line []byte) error) error {
	br := bufio.NewReaderSize(http.MaxBytesReader(w, r.Body, s.opts.MaxBatchBody), 64<<10)
	var long []byte // a line longer than br's buffer
	count := 0
	for n := 1; ; n++ {
		line, err := br.ReadSlice('\n')
		for errors.Is(err, bufio.ErrBufferFull) {
			long = append(long, line...)
			line, err = br.ReadSlice('\n')
		}
		if len(long) > 0 {
			long = append(long, line...)
			line = long
		}
		if err != nil && err != io.EOF {
			return requestErr(err)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			if count == s.opts.MaxBatch {
				return bad("more than %d lines in one request (the server's --max-batch): send them in several", s.opts.MaxBatch)
			}
			count++
			if ferr := fn(n, t); ferr != nil {
				return ferr
			}
		}
		long = long[:0]
		if err == io.EOF {
			return nil
		}
	}
}

// documentsAnswer is the answer to POST /v1/documents.
type documentsAnswer struct {
	Stored   int         `json:"stored"`
	Rejected int         `json:"rejected"`
	Errors   []lineError `json:"errors"`
	// Unchanged counts documents named without an id that are stored as
	// they are already (not written again); UnchangedLines are their lines.
	Unchanged      int   `json:"unchanged,omitempty"`
	UnchangedLines []int `json:"unchanged_lines,omitempty"`
	// IDs has one entry a document line, in order: its id (a line named
	// without an id gets the name's), or null if the line was refused.
	IDs []*uint64 `json:"ids"`
	// Fingerprints, when a line sent "text", has one entry a document
	// line too: the fingerprint stored, or null if the line was refused.
	Fingerprints []*string `json:"fingerprints,omitempty"`
}

func (s *Server) postDocuments(w http.ResponseWriter, r *http.Request) error {
	var docs []engine.Doc
	ans := documentsAnswer{Errors: []lineError{}, IDs: []*uint64{}}
	var fps []*string
	texts := false
	var ids *naming.IDs // for documents named without an id, made at the first
	err := s.streamLines(w, r, func(n int, line []byte) error {
		var req docRequest
		dec := json.NewDecoder(bytes.NewReader(line))
		dec.DisallowUnknownFields()
		err := dec.Decode(&req)
		if err != nil {
			err = requestErr(err)
		} else if dec.More() {
			err = errors.New("more than one JSON value on the line")
		}
		var d engine.Doc
		unchanged := false
		switch {
		case err != nil:
		case req.ID == nil && req.Name != "":
			// Named without an id: the name's (a file added again is the
			// same document).
			if d, err = s.document(0, &req); err != nil {
				break
			}
			if ids == nil {
				if ids, err = naming.New(r.Context(), s.db, true); err != nil {
					if !errors.Is(err, naming.ErrInOrder) {
						return err
					}
					ids, err = nil, badRequest{err}
					break
				}
			}
			var what int
			d.ID, what, err = ids.ID(r.Context(), d.Name, d.Fingerprint, d.Sketch)
			unchanged = what == naming.Unchanged
		default:
			var id uint64
			if id, err = parseID(req.ID); err == nil {
				d, err = s.document(id, &req)
			}
		}
		texts = texts || req.Text != nil
		if err != nil {
			ans.Rejected++
			if len(ans.Errors) < maxLineErrors {
				ans.Errors = append(ans.Errors, lineError{n, err.Error()})
			}
			ans.IDs, fps = append(ans.IDs, nil), append(fps, nil)
			return nil
		}
		fp := simhash.Format(d.Fingerprint)
		ans.IDs, fps = append(ans.IDs, &d.ID), append(fps, &fp)
		if unchanged {
			ans.Unchanged++
			ans.UnchangedLines = append(ans.UnchangedLines, n)
			return nil
		}
		docs = append(docs, d)
		return nil
	})
	if err != nil {
		return err
	}
	if err := s.writes.Write(r.Context(), engine.Commit{Insert: docs}); err != nil {
		return err
	}
	ans.Stored = len(docs)
	if texts {
		ans.Fingerprints = fps
	}
	writeJSON(w, http.StatusOK, ans)
	return nil
}

func (s *Server) getDocument(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
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
	d, err := s.db.Get(r.Context(), id)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, api.DocOf(d))
	return nil
}

func (s *Server) deleteDocument(w http.ResponseWriter, r *http.Request) error {
	id, err := pathID(r)
	if err != nil {
		return err
	}
	_, err = s.db.Get(r.Context(), id)
	stored := err == nil
	if err != nil && !errors.Is(err, engine.ErrNotFound) {
		return err
	}
	if err := s.writes.Write(r.Context(), engine.Commit{Delete: []uint64{id}}); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": id, "deleted": stored})
	return nil
}

// statsOf is the index's statistics and text options, as both APIs give
// them.
func (s *Server) statsOf(ctx context.Context) (api.Stats, error) {
	return api.StatsOfIndex(ctx, api.Embedded{DB: s.db})
}

func (s *Server) stats(w http.ResponseWriter, r *http.Request) error {
	out, err := s.statsOf(r.Context())
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, out)
	return nil
}
