package dataset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// ParseJSON reads a record of JSON lines: an object whose fields (f,
// after its defaults) make a document. Place and Ordinal are left to the
// caller. Its errors name the field (ErrField) or the JSON's fault.
func ParseJSON(line []byte, f Fields) (Record, error) { return parseJSON(line, f, true) }

// parseJSON is ParseJSON, with scan through scanObject where it can
// vouch for the line, else (and without scan) through encoding/json.
func parseJSON(line []byte, f Fields, scan bool) (Record, error) {
	f = f.withDefaults()
	want, raws := []string{f.Text}, make([]json.RawMessage, 3)
	if f.ID != "-" {
		want = append(want, f.ID)
	}
	if f.Name != "" {
		want = append(want, f.Name)
	}
	scanned := scan && scanObject(line, want, raws)
	if !scanned {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(line, &obj); err != nil {
			return Record{}, fmt.Errorf("not a JSON object: %w", err)
		}
		if obj == nil {
			return Record{}, fmt.Errorf("not a JSON object: null")
		}
		for i, w := range want {
			raws[i] = obj[w]
		}
	}
	var rec Record
	raw := raws[0]
	if raw == nil {
		return Record{}, fmt.Errorf("%w: no field %q", ErrField, f.Text)
	}
	if scanned && raw[0] == '"' {
		// Vouched for by the scan: its body decoded without a second look.
		rec.Text = decodeString(raw[1:len(raw)-1], bytes.IndexByte(raw, '\\') >= 0)
	} else if err := json.Unmarshal(raw, &rec.Text); err != nil || isNull(raw) {
		return Record{}, fmt.Errorf("%w: field %q: %s, want a string", ErrField, f.Text, kind(raw))
	}
	next := 1
	if f.ID != "-" {
		if raw := raws[next]; raw != nil && !isNull(raw) {
			if err := parseID(raw, &rec); err != nil {
				return Record{}, fmt.Errorf("%w: field %q: %v", ErrField, f.ID, err)
			}
		}
		next++
	}
	if f.Name != "" {
		if raw := raws[next]; raw != nil && !isNull(raw) {
			switch raw[0] {
			case '"':
				if err := json.Unmarshal(raw, &rec.Name); err != nil {
					return Record{}, fmt.Errorf("%w: field %q: %v", ErrField, f.Name, err)
				}
			case '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
				rec.Name = string(raw)
			default:
				return Record{}, fmt.Errorf("%w: field %q: %s, want a string or a number", ErrField, f.Name, kind(raw))
			}
		}
	}
	return rec, nil
}

// parseID reads an id field: an integer, a string of one, or another
// string (a Key).
func parseID(raw json.RawMessage, rec *Record) error {
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return err
		}
		if id, err := strconv.ParseUint(s, 10, 64); err == nil {
			rec.ID, rec.HasID = id, true
		} else if s == "" {
			return fmt.Errorf("an empty string")
		} else {
			rec.Key = s
		}
		return nil
	}
	id, err := strconv.ParseUint(string(raw), 10, 64)
	if err != nil {
		return fmt.Errorf("%s, want an integer from 0 to %d or a string", short(raw), uint64(1<<64-1))
	}
	rec.ID, rec.HasID = id, true
	return nil
}

func isNull(raw json.RawMessage) bool { return bytes.Equal(raw, []byte("null")) }

// kind names a JSON value's kind.
func kind(raw json.RawMessage) string {
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// short is a value as an error quotes it: at most 40 bytes.
func short(raw json.RawMessage) string {
	if len(raw) > 40 {
		return string(raw[:40]) + "..."
	}
	return string(raw)
}
