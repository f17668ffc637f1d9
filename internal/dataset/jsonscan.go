package dataset

import (
	"bytes"
	"encoding/json"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// Most of a dataset's line is its text, and encoding/json reads it twice
// (once to check the line, once to decode it) into a map of every field.
// scanObject reads a line's top-level fields in one pass and hands back
// the raw values of those asked for; a string without escapes is taken
// as it is. It gives up (ok false) on anything it does not read exactly
// as encoding/json would: the caller then parses with encoding/json, so
// that a record means the same either way (FuzzParseJSON checks it).

// scanObject returns the raw values of the fields named in want (nil for
// one absent), ok false if it cannot vouch for the line. A field given
// twice keeps its last value, as encoding/json's map does.
func scanObject(line []byte, want []string, out []json.RawMessage) bool {
	i := skipSpace(line, 0)
	if i >= len(line) || line[i] != '{' {
		return false
	}
	i = skipSpace(line, i+1)
	if i < len(line) && line[i] == '}' {
		return skipSpace(line, i+1) == len(line)
	}
	for {
		if i >= len(line) || line[i] != '"' {
			return false
		}
		end, escaped := scanString(line, i)
		if end < 0 || escaped {
			return false // an escaped key: rare, and compared by its value
		}
		key := line[i+1 : end-1]
		i = skipSpace(line, end)
		if i >= len(line) || line[i] != ':' {
			return false
		}
		i = skipSpace(line, i+1)
		start := i
		if i = skipValue(line, i, 0); i < 0 {
			return false
		}
		for k, w := range want {
			if string(key) == w {
				out[k] = line[start:i]
			}
		}
		i = skipSpace(line, i)
		if i >= len(line) {
			return false
		}
		switch line[i] {
		case ',':
			i = skipSpace(line, i+1)
		case '}':
			return skipSpace(line, i+1) == len(line)
		default:
			return false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// scanString returns the end of the string that starts at b[i] (past its
// closing quote), -1 if it is not a valid one, and whether it holds an
// escape.
func scanString(b []byte, i int) (end int, escaped bool) {
	i++
	for i < len(b) {
		c := b[i]
		switch {
		case c == '"':
			return i + 1, escaped
		case c == '\\':
			escaped = true
			if i+1 >= len(b) {
				return -1, escaped
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if i+6 > len(b) || !isHex4(b[i+2:i+6]) {
					return -1, escaped
				}
				i += 6
			default:
				return -1, escaped
			}
		case c < 0x20:
			return -1, escaped
		case c < utf8.RuneSelf:
			i++
		default:
			// Invalid UTF-8 is replaced by encoding/json: leave it to it.
			r, n := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && n == 1 {
				return -1, true
			}
			i += n
		}
	}
	return -1, escaped
}

func isHex4(b []byte) bool {
	for _, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// maxDepth bounds the nesting skipValue follows.
const maxDepth = 64

// skipValue returns the end of the value that starts at b[i], -1 if it
// cannot vouch for it.
func skipValue(b []byte, i, depth int) int {
	if i >= len(b) || depth > maxDepth {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		end, _ := scanString(b, i)
		return end
	case c == '{' || c == '[':
		closer := byte('}')
		if c == '[' {
			closer = ']'
		}
		i = skipSpace(b, i+1)
		if i < len(b) && b[i] == closer {
			return i + 1
		}
		for {
			if c == '{' {
				if i >= len(b) || b[i] != '"' {
					return -1
				}
				end, _ := scanString(b, i)
				if end < 0 {
					return -1
				}
				i = skipSpace(b, end)
				if i >= len(b) || b[i] != ':' {
					return -1
				}
				i = skipSpace(b, i+1)
			}
			if i = skipValue(b, i, depth+1); i < 0 {
				return -1
			}
			i = skipSpace(b, i)
			if i >= len(b) {
				return -1
			}
			switch b[i] {
			case ',':
				i = skipSpace(b, i+1)
			case closer:
				return i + 1
			default:
				return -1
			}
		}
	case bytes.HasPrefix(b[i:], []byte("true")):
		return i + 4
	case bytes.HasPrefix(b[i:], []byte("false")):
		return i + 5
	case bytes.HasPrefix(b[i:], []byte("null")):
		return i + 4
	case c == '-' || '0' <= c && c <= '9':
		return skipNumber(b, i)
	}
	return -1
}

// skipNumber returns the end of the JSON number at b[i], -1 if it is not
// one.
func skipNumber(b []byte, i int) int {
	if b[i] == '-' {
		i++
	}
	switch {
	case i < len(b) && b[i] == '0':
		i++
	case i < len(b) && '1' <= b[i] && b[i] <= '9':
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
	default:
		return -1
	}
	if i < len(b) && b[i] == '.' {
		i++
		n := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == n {
			return -1
		}
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		n := i
		for i < len(b) && '0' <= b[i] && b[i] <= '9' {
			i++
		}
		if i == n {
			return -1
		}
	}
	if i < len(b) && !isDelimiter(b[i]) {
		return -1
	}
	return i
}

func isDelimiter(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// decodeString is the value of a JSON string's body that scanString
// vouched for.
func decodeString(body []byte, escaped bool) string {
	if !escaped {
		return string(body)
	}
	out := make([]byte, 0, len(body))
	for i := 0; i < len(body); {
		c := body[i]
		if c != '\\' {
			out = append(out, c)
			i++
			continue
		}
		switch body[i+1] {
		case 'u':
			r := rune(hex4(body[i+2 : i+6]))
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(body) && body[i] == '\\' && body[i+1] == 'u' {
					if dec := utf16.DecodeRune(r, rune(hex4(body[i+2:i+6]))); dec != unicode.ReplacementChar {
						out = utf8.AppendRune(out, dec)
						i += 6
						continue
					}
				}
				r = unicode.ReplacementChar
			}
			out = utf8.AppendRune(out, r)
			continue
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		default: // '"', '\\', '/'
			out = append(out, body[i+1])
		}
		i += 2
	}
	return string(out)
}

// hex4 is the value of four hex digits (scanString checked them).
func hex4(b []byte) uint32 {
	var v uint32
	for _, c := range b {
		v <<= 4
		switch {
		case c <= '9':
			v |= uint32(c - '0')
		case c >= 'a':
			v |= uint32(c - 'a' + 10)
		default:
			v |= uint32(c - 'A' + 10)
		}
	}
	return v
}
