// Package quote quotes untrusted input for error messages: whole when it
// is short, cut at a rune boundary with its length when it is not, so that
// an error names bad input without echoing a megabyte of it.
package quote

import (
	"fmt"
	"strconv"
	"unicode/utf8"
)

// Short quotes s as strconv.Quote does, cut to its first most bytes.
func Short(s string, most int) string {
	if len(s) <= most {
		return strconv.Quote(s)
	}
	cut := most
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return fmt.Sprintf("%s... (%d bytes)", strconv.Quote(s[:cut]), len(s))
}
