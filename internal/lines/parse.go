package lines

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/simhashdb/simhashdb/internal/quote"
	"github.com/simhashdb/simhashdb/simhash"
)

// Fingerprint reads a fingerprint of find-all's and find-clusters' input:
// decimal, as simhash-cpp's programs read it (any number of digits), or 0x
// hex.
func Fingerprint(s string) (uint64, error) {
	if t := strings.TrimSpace(s); strings.HasPrefix(t, "0x") || strings.HasPrefix(t, "0X") {
		return simhash.Parse(t)
	}
	return simhash.ParseDecimal(s)
}

// Query reads a line of batch's input, "<fingerprint>" or "<qid>
// <fingerprint>", the fingerprint as simhash.Parse reads it. qid is the
// JSON of the given qid (a number when it is an unsigned decimal, else a
// string), or of the line number n when there is none.
func Query(line string, n int) (qid json.RawMessage, fp uint64, err error) {
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
		return nil, 0, fmt.Errorf("want <fingerprint> or <qid> <fingerprint>, got %s", quote.Short(line, 60))
	}
	fp, err = simhash.Parse(f[0])
	if err != nil {
		return nil, 0, err
	}
	return qid, fp, nil
}

// Record reads a line of add's input, "<id> <fingerprint> [name]": the id
// an unsigned decimal, the fingerprint as simhash.Parse reads it, the name
// the rest of the line (a copy).
func Record(line string) (id, fp uint64, name string, err error) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return 0, 0, "", fmt.Errorf("want <id> <fingerprint> [name], got %s", quote.Short(line, 60))
	}
	id, err = strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return 0, 0, "", fmt.Errorf("id %s: want an unsigned decimal integer below 2^64", quote.Short(f[0], 60))
	}
	fp, err = simhash.Parse(f[1])
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
