package lines

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/simhashdb/simhashdb/simhash"
)

// AppendArray appends one line of find-all's and find-clusters' output to
// dst: a JSON array of unsigned integers and a newline.
func AppendArray(dst []byte, vs ...uint64) []byte {
	dst = append(dst, '[')
	for i, v := range vs {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = strconv.AppendUint(dst, v, 10)
	}
	return append(dst, "]\n"...)
}

// AppendHexArray is AppendArray with each value a JSON string of "0x" and
// 16 hex digits (simhash.Format).
func AppendHexArray(dst []byte, vs ...uint64) []byte {
	dst = append(dst, '[')
	for i, v := range vs {
		if i > 0 {
			dst = append(dst, ", "...)
		}
		dst = append(append(append(dst, '"'), simhash.Format(v)...), '"')
	}
	return append(dst, "]\n"...)
}

// Match is a stored document within distance of a query, in batch's and
// query's JSON: fingerprints as 16 hex digits.
type Match struct {
	ID       uint64 `json:"id"`
	Name     string `json:"name"`
	FP       string `json:"fp"`
	Distance int    `json:"distance"`
	// Similarity is the estimated Jaccard similarity of the two texts
	// (package textindex), in an answer about text verified by sketches.
	Similarity *float64 `json:"similarity,omitempty"`
}

// NewMatch returns the Match of a document.
func NewMatch(id uint64, name string, fp uint64, distance int) Match {
	return Match{ID: id, Name: name, FP: simhash.Format(fp), Distance: distance}
}

// Answer is one query's answer, a line of batch's output. Its matches are
// nearest first, then by id.
type Answer struct {
	Query   string          `json:"query"`
	QID     json.RawMessage `json:"qid,omitempty"`
	Matches []Match         `json:"matches"`
}

// NameField is a name as the last field of an output line ("<0x
// fingerprint><TAB><name>", add --text's "<id><TAB><fp><TAB><name>"): as
// it is, unless a line cannot carry it so (a line break or tab in it, or
// space at either end, which a reader trims) or it would read as quoted,
// then as a Go string literal, which Named reads back.
func NameField(name string) string {
	if strings.ContainsAny(name, "\n\r\t") || strings.HasPrefix(name, `"`) || strings.TrimSpace(name) != name {
		return strconv.Quote(name)
	}
	return name
}
