package lines

import (
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/simhashdb/simhashdb/internal/quote"
	"github.com/simhashdb/simhashdb/simhash"
)

// Syntax says how fingerprints are written in the lines: decimal (any
// number of digits) or "0x" hex, as simhash.Parse reads them; with Hex,
// bare hexadecimal (simhash.ParseBareHex), for input known to be hex.
//
// Every reader also takes the lines "simhashdb fingerprint" writes,
// "<0x fingerprint><TAB><path>", as they are: a fingerprint with a name.
type Syntax struct {
	Hex bool
	// Sketch, when not 0, is the bytes of the sketch each of add's
	// records carries after its fingerprint (SketchedRecord).
	Sketch int
}

// Fingerprint reads a fingerprint as s says.
func (s Syntax) Fingerprint(str string) (uint64, error) {
	if s.Hex {
		return simhash.ParseBareHex(str)
	}
	return simhash.Parse(str)
}

// Named reads a line of "simhashdb fingerprint": "<0x fingerprint><TAB>
// <name>", the name as NameField writes it. ok is false for a line of
// another form.
func (s Syntax) Named(line string) (fp uint64, name string, ok bool) {
	left, right, found := strings.Cut(strings.TrimLeft(line, " "), "\t")
	left = strings.TrimSpace(left)
	if !found || strings.ContainsAny(left, " ") || !(strings.HasPrefix(left, "0x") || strings.HasPrefix(left, "0X")) {
		return 0, "", false
	}
	fp, err := simhash.Parse(left)
	if err != nil {
		return 0, "", false
	}
	name = strings.TrimSpace(right)
	if strings.HasPrefix(name, `"`) {
		if u, err := strconv.Unquote(name); err == nil {
			return fp, u, true // written by NameField
		}
	}
	return fp, strings.Clone(name), true
}

// Fingerprint reads a fingerprint of find-all's and find-clusters' input
// with the default Syntax.
func Fingerprint(s string) (uint64, error) { return Syntax{}.Fingerprint(s) }

// Query reads a line of batch's input with the default Syntax.
func Query(line string, n int) (json.RawMessage, uint64, error) { return Syntax{}.Query(line, n) }

// Record reads a line of add's input with the default Syntax.
func Record(line string) (uint64, uint64, string, error) { return Syntax{}.Record(line) }

// Pair reads a line of find-all's and find-clusters' input: a fingerprint,
// alone or as "simhashdb fingerprint" writes it (the name is dropped).
func (s Syntax) Pair(line string) (uint64, error) {
	if fp, _, ok := s.Named(line); ok {
		return fp, nil
	}
	return s.Fingerprint(line)
}

// AnyFingerprint reads the fingerprint of any line the commands write for
// one another: a bare fingerprint (find-all's input), a line of "simhashdb
// fingerprint", or a record of add's input or export's output ("<id>
// <fingerprint> [name]"). A blank line or a "#" comment (export's header
// among them) has none: skip.
func (s Syntax) AnyFingerprint(line string) (fp uint64, skip bool, err error) {
	if t := strings.TrimSpace(line); t == "" || t[0] == '#' {
		return 0, true, nil
	}
	fp, err = s.Pair(line)
	if err == nil {
		return fp, false, nil
	}
	if _, rfp, _, rerr := s.Record(line); rerr == nil {
		return rfp, false, nil
	}
	return 0, false, fmt.Errorf("want a fingerprint, a line of 'simhashdb fingerprint' or <id> <fingerprint> [name]: %w", err)
}

// Query reads a line of batch's input, "<fingerprint>", "<qid>
// <fingerprint>" or "<0x fingerprint><TAB><name>" (the name is the qid).
// qid is the JSON of the given qid (a number when it is an unsigned
// decimal, else a string), or of the line number n when there is none.
func (s Syntax) Query(line string, n int) (qid json.RawMessage, fp uint64, err error) {
	if fp, name, ok := s.Named(line); ok {
		qid, _ = json.Marshal(name)
		return qid, fp, nil
	}
	f := strings.Fields(line)
	switch len(f) {
	case 1:
		qid = json.RawMessage(strconv.Itoa(n))
	case 2:
		if _, err := strconv.ParseUint(f[0], 10, 64); err == nil {
			qid = json.RawMessage(f[0])
		} else {
			qid, _ = json.Marshal(f[0])
		}
		f = f[1:]
	default:
		// A record of add's input or export's output: its id is the qid.
		if id, rfp, _, err := s.Record(line); err == nil {
			return json.RawMessage(strconv.FormatUint(id, 10)), rfp, nil
		}
		return nil, 0, fmt.Errorf("want <fingerprint>, <qid> <fingerprint>, <id> <fingerprint> <name> or <0x fingerprint><TAB><name>, got %s", quote.Short(line, 60))
	}
	fp, err = s.Fingerprint(f[0])
	if err != nil {
		return nil, 0, err
	}
	return qid, fp, nil
}

// Record reads a line of add's input, "<id> <fingerprint> [name]": the id
// an unsigned decimal, the fingerprint as s says, the name the rest of the
// line (a copy).
func (s Syntax) Record(line string) (id, fp uint64, name string, err error) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0, 0, "", fmt.Errorf("want <id> <fingerprint> [name], got %s", quote.Short(line, 60))
	}
	id, err = strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return 0, 0, "", fmt.Errorf("id %s: want an unsigned decimal integer below 2^64", quote.Short(f[0], 60))
	}
	fp, err = s.Fingerprint(f[1])
	if err != nil {
		return 0, 0, "", fmt.Errorf("fingerprint: %w", err)
	}
	if len(f) > 2 {
		// The name is the rest of the line after the fingerprint.
		rest := strings.TrimLeft(line, " \t")
		rest = strings.TrimLeft(rest[len(f[0]):], " \t")
		name = strings.TrimSpace(rest[len(f[1]):])
	}
	return id, fp, strings.Clone(name), nil
}

// SketchedRecord reads a line of add's input into an index whose documents
// keep a sketch of s.Sketch bytes: "<id> <fingerprint> <sketch> [name]",
// the sketch in 2*s.Sketch hexadecimal digits (as export writes it), its
// bytes returned in a string.
func (s Syntax) SketchedRecord(line string) (id, fp uint64, sketch, name string, err error) {
	size := s.Sketch
	id, fp, rest, err := s.Record(line)
	if err != nil {
		return 0, 0, "", "", fmt.Errorf("%w (and a sketch after the fingerprint: this index keeps one with each document)", err)
	}
	field := rest
	if i := strings.IndexAny(rest, " \t"); i >= 0 {
		field, name = rest[:i], rest[i+1:]
	}
	b, herr := hex.DecodeString(field)
	if herr != nil || len(b) != size {
		return 0, 0, "", "", fmt.Errorf("sketch %s: want %d hexadecimal digits after the fingerprint: this index keeps a sketch of each document's text (add files with add --text, or the lines export writes)", quote.Short(field, 20), 2*size)
	}
	return id, fp, string(b), strings.TrimSpace(name), nil
}
