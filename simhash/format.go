package simhash

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"
)

// ErrSyntax is wrapped by every error of Parse.
var ErrSyntax = errors.New("simhash: invalid fingerprint")

// Distance returns the Hamming distance between two fingerprints: the number
// of bit positions in which they differ.
func Distance(a, b uint64) int { return bits.OnesCount64(a ^ b) }

// Format returns fp as 16 lowercase hexadecimal digits, the form simhashdb
// prints and stores in JSON (JSON numbers lose precision above 2^53).
func Format(fp uint64) string {
	const digits = "0123456789abcdef"
	var b [16]byte
	for i := 15; i >= 0; i-- {
		b[i] = digits[fp&0xf]
		fp >>= 4
	}
	return string(b[:])
}

// Parse reads a fingerprint written as an unsigned decimal integer below 2^64
// or as "0x" followed by 1 to 16 hexadecimal digits: the input formats of the
// command line. Surrounding spaces are ignored. Bare hexadecimal is refused
// rather than guessed (a 16-digit decimal would read as a different number);
// use ParseHex for Format's output. Errors wrap ErrSyntax and quote the input.
func Parse(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "0x") || strings.HasPrefix(t, "0X") {
		h := t[2:]
		if h == "" || len(h) > 16 || !isHex(h) {
			return 0, fmt.Errorf("%w %q: want 1 to 16 hex digits after 0x", ErrSyntax, s)
		}
		v, _ := strconv.ParseUint(h, 16, 64) // at most 16 hex digits always fit
		return v, nil
	}
	v, err := ParseDecimal(t)
	if err != nil && t != "" && isHex(t) && strings.ContainsAny(t, "abcdefABCDEF") {
		return 0, fmt.Errorf("%w %q: looks hexadecimal; write it as 0x%s", ErrSyntax, s, t)
	}
	return v, err
}

// ParseHex reads exactly 16 hexadecimal digits, the form Format writes.
func ParseHex(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if len(t) != 16 || !isHex(t) {
		return 0, fmt.Errorf("%w %q: want exactly 16 hex digits", ErrSyntax, s)
	}
	v, _ := strconv.ParseUint(t, 16, 64)
	return v, nil
}

// ParseDecimal reads an unsigned decimal integer below 2^64, the input format
// of simhash-cpp's programs.
func ParseDecimal(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, fmt.Errorf("%w: empty string", ErrSyntax)
	}
	v, err := strconv.ParseUint(t, 10, 64)
	if err != nil {
		var ne *strconv.NumError
		if errors.As(err, &ne) && errors.Is(ne.Err, strconv.ErrRange) {
			return 0, fmt.Errorf("%w %q: larger than 2^64-1", ErrSyntax, s)
		}
		return 0, fmt.Errorf("%w %q: want an unsigned decimal or 0x-prefixed hex", ErrSyntax, s)
	}
	return v, nil
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}
