package simhash

import (
	"errors"
	"fmt"
	"math/bits"
	"strconv"
	"strings"

	quotepkg "github.com/simhashdb/simhashdb/internal/quote"
)

// ErrSyntax is wrapped by every error of Parse.
var ErrSyntax = errors.New("simhash: invalid fingerprint")

// Distance returns the Hamming distance between two fingerprints: the number
// of bit positions in which they differ.
func Distance(a, b uint64) int { return bits.OnesCount64(a ^ b) }

// Format returns fp as "0x" and 16 lowercase hexadecimal digits: the form
// simhashdb prints, in text and in JSON (JSON numbers lose precision above
// 2^53), and which Parse reads back.
func Format(fp uint64) string {
	const digits = "0123456789abcdef"
	var b [18]byte
	b[0], b[1] = '0', 'x'
	for i := 17; i >= 2; i-- {
		b[i] = digits[fp&0xf]
		fp >>= 4
	}
	return string(b[:])
}

// Parse reads a fingerprint written as "0x" followed by 1 to 16
// hexadecimal digits (Format's output) or as an unsigned decimal integer
// below 2^64, of any number of digits (simhash-cpp's form, and what most
// databases print). Surrounding spaces are ignored. Bare hexadecimal is
// refused, not guessed: ParseBareHex reads it. Errors wrap ErrSyntax and
// quote the input.
func Parse(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "0x") || strings.HasPrefix(t, "0X") {
		h := t[2:]
		if h == "" || len(h) > 16 || !isHex(h) {
			return 0, fmt.Errorf("%w %s: want 1 to 16 hex digits after 0x", ErrSyntax, quote(s))
		}
		v, _ := strconv.ParseUint(h, 16, 64) // at most 16 hex digits always fit
		return v, nil
	}
	v, err := ParseDecimal(t)
	if err != nil && t != "" && len(t) <= 16 && isHex(t) && strings.ContainsAny(t, "abcdefABCDEF") {
		return 0, fmt.Errorf("%w %s: looks hexadecimal; write it as 0x%s", ErrSyntax, quote(s), t)
	}
	return v, err
}

// ParseBareHex reads 1 to 16 hexadecimal digits, with or without "0x": for
// input known to be hexadecimal, where "0123456789012345" is hex too.
func ParseBareHex(s string) (uint64, error) {
	t := strings.TrimSpace(s)
	if strings.HasPrefix(t, "0x") || strings.HasPrefix(t, "0X") {
		t = t[2:]
	}
	if t == "" || len(t) > 16 || !isHex(t) {
		return 0, fmt.Errorf("%w %s: want 1 to 16 hex digits", ErrSyntax, quote(s))
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
			return 0, fmt.Errorf("%w %s: larger than 2^64-1", ErrSyntax, quote(s))
		}
		return 0, fmt.Errorf("%w %s: want an unsigned decimal or 0x-prefixed hex", ErrSyntax, quote(s))
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

// quote quotes s for an error: a fingerprint is at most 20 characters.
func quote(s string) string { return quotepkg.Short(s, 40) }
