package simhash

import (
	"bufio"
	"bytes"
	"io"

	"golang.org/x/text/unicode/norm"
)

// roffText is an io.Reader of the text a reader of a manual page sees, read
// from its roff source (man(7) and mdoc(7) macros): requests, comments,
// macro definitions and escape sequences are dropped; the arguments of the
// macros that print them (headings, font macros, list tags, mdoc's
// callable macros) are kept. It is not a typesetter: words are what count,
// not where a line breaks.
type roffText struct {
	r       *bufio.Reader
	skip    []byte // the end of an ignored block (.de, .ig) being skipped
	midLine bool   // the previous read ended inside an over-long line
	join    bool   // the line ended in \c or \: the next continues its word
	line    []byte // the text of the current line
	pending []byte
	err     error
}

// roffLineMax is the longest line read as one; a longer one is read in
// pieces, as text, so memory stays bounded.
const roffLineMax = 64 << 10

func newRoffText(r io.Reader) *roffText {
	return &roffText{r: bufio.NewReaderSize(r, roffLineMax)}
}

func (t *roffText) Read(p []byte) (int, error) {
	for len(t.pending) == 0 {
		if t.err != nil {
			return 0, t.err
		}
		raw, err := t.r.ReadSlice('\n')
		if err != nil && err != bufio.ErrBufferFull {
			t.err = err
		}
		whole := err != bufio.ErrBufferFull
		t.line = t.line[:0]
		if !t.midLine {
			t.readLine(bytes.TrimRight(raw, "\r\n"))
		} else {
			t.escapes(raw)
		}
		t.midLine = !whole
		if whole && !t.join {
			t.line = append(t.line, ' ')
		}
		t.join = false
		t.pending = t.line
	}
	n := copy(p, t.pending)
	t.pending = t.pending[n:]
	return n, nil
}

// readLine appends to t.line the visible text of one whole line.
func (t *roffText) readLine(l []byte) {
	if t.skip != nil {
		// The end of the block: its control line, spaces allowed after
		// the dot (".  ." ends a macro as ".." does).
		if len(l) > 0 && (l[0] == '.' || l[0] == '\'') {
			if f := bytes.Fields(l[1:]); len(f) > 0 && bytes.Equal(f[0], t.skip[1:]) {
				t.skip = nil
			}
		}
		return
	}
	if len(l) == 0 || (l[0] != '.' && l[0] != '\'') {
		t.escapes(l)
		return
	}
	name, args := roffRequest(l[1:])
	switch {
	case len(name) == 0: // "." alone, or a comment
	case string(name) == "de" || string(name) == "de1" || string(name) == "am" || string(name) == "ig":
		t.skip = []byte("..")
		if c := bytes.Index(args, []byte(`\"`)); c >= 0 {
			args = args[:c] // a comment after the request
		}
		if end := bytes.Fields(args); string(name) == "ig" && len(end) > 0 {
			t.skip = append([]byte("."), end[0]...)
		}
	case string(name) == "IP": // a tag, then an indent
		t.arguments(args, false, 1)
	case roffPrints[string(name)]:
		t.arguments(args, false, -1)
	case isMdocMacro(name) && !mdocSilent[string(name)]:
		t.arguments(args, true, -1)
	}
}

// roffRequest splits a control line (without its "." or "'") into the
// macro's name and its arguments; a comment has no name.
func roffRequest(l []byte) (name, args []byte) {
	l = bytes.TrimLeft(l, " \t")
	if bytes.HasPrefix(l, []byte(`\"`)) || bytes.HasPrefix(l, []byte(`\#`)) {
		return nil, nil
	}
	i := bytes.IndexAny(l, " \t")
	if i < 0 {
		return l, nil
	}
	return l[:i], l[i+1:]
}

// roffPrints lists the man(7) macros whose arguments are printed: title,
// headings, font changes, list tags, synopsis and link macros.
var roffPrints = map[string]bool{
	"TH": true, "SH": true, "SS": true, "B": true, "I": true, "SM": true, "SB": true,
	"BI": true, "BR": true, "IB": true, "IR": true, "RB": true, "RI": true,
	"TQ": true, "OP": true, "SY": true, "UR": true, "MT": true, "Nm": true,
}

// mdocSilent lists mdoc's macros whose arguments are settings (lists,
// displays, spacing), not text.
var mdocSilent = map[string]bool{
	"Bl": true, "El": true, "Bd": true, "Ed": true, "Bf": true, "Ef": true, "Bk": true,
	"Ek": true, "Sm": true, "Pp": true, "Lp": true, "Ns": true,
}

// isMdocMacro reports whether name is of mdoc's form: a capital and a small
// letter (Nm, Fl, Ar, Xr, ...), whose arguments print.
func isMdocMacro(name []byte) bool {
	return len(name) == 2 && name[0] >= 'A' && name[0] <= 'Z' && name[1] >= 'a' && name[1] <= 'z'
}

// arguments appends a macro's first n arguments (all when n < 0),
// unquoted; with mdoc, words that name another callable macro are left out.
func (t *roffText) arguments(args []byte, mdoc bool, n int) {
	for ; len(args) > 0 && n != 0; n-- {
		args = bytes.TrimLeft(args, " \t")
		if len(args) == 0 {
			return
		}
		var w []byte
		if args[0] == '"' {
			end := bytes.IndexByte(args[1:], '"')
			if end < 0 {
				w, args = args[1:], nil
			} else {
				w, args = args[1:1+end], args[2+end:]
			}
		} else {
			end := bytes.IndexAny(args, " \t")
			if end < 0 {
				w, args = args, nil
			} else {
				w, args = args[:end], args[end:]
			}
			if mdoc && isMdocMacro(w) {
				continue
			}
		}
		t.escapes(w)
		t.line = append(t.line, ' ')
	}
}

// escapes appends text with roff's escape sequences resolved: font and size
// changes, strings, registers, motions and comments dropped; \- , \e, \(xx
// and \[name] as the characters they print where they are common in
// manuals (dashes, quotes), as nothing otherwise.
func (t *roffText) escapes(s []byte) {
	for len(s) > 0 {
		i := bytes.IndexByte(s, '\\')
		if i < 0 {
			t.line = append(t.line, s...)
			return
		}
		t.line = append(t.line, s[:i]...)
		s = s[i+1:]
		if len(s) == 0 {
			t.join = true // an escaped newline joins lines
			return
		}
		c := s[0]
		s = s[1:]
		if c == 'c' && len(s) == 0 {
			t.join = true
			return
		}
		switch c {
		case '"', '#': // comment to the end of the line
			return
		case '-', '\\', '.', '\'', '`':
			t.line = append(t.line, c)
		case 'e':
			t.line = append(t.line, '\\')
		case ' ', '~', '0', '|', '^':
			t.line = append(t.line, ' ')
		case '(':
			if len(s) >= 2 {
				t.line = append(t.line, roffSpecial(s[:2])...)
				s = s[2:]
			}
		case '[':
			end := bytes.IndexByte(s, ']')
			if end < 0 {
				return
			}
			t.line = append(t.line, roffSpecial(s[:end])...)
			s = s[end+1:]
		case 'f', 's', '*', 'n', 'F', 'm', 'M', 'g', 'k', 'V', 'Y', 'O':
			s = roffSkipName(s, c == 's')
		case 'h', 'v', 'w', 'l', 'L', 'o', 'b', 'x', 'X', 'N', 'D', 'Z', 'A', 'B', 'C', 'R', 'S', 'H':
			s = roffSkipDelimited(s)
		default: // \&, \%, \c, \u, \d, \p, \r, \t, \z and unknown escapes print nothing
		}
	}
}

// roffSkipName skips the name of an escape's argument: one character, "("
// and two, or "[...]"; size changes take a sign and digits.
func roffSkipName(s []byte, size bool) []byte {
	if size && len(s) > 0 && (s[0] == '+' || s[0] == '-') {
		s = s[1:]
	}
	switch {
	case len(s) == 0:
		return s
	case s[0] == '(':
		return s[min(len(s), 3):]
	case s[0] == '[':
		if end := bytes.IndexByte(s, ']'); end >= 0 {
			return s[end+1:]
		}
		return nil
	case size && s[0] >= '0' && s[0] <= '9':
		if len(s) > 1 && s[0] >= '1' && s[0] <= '3' && s[1] >= '0' && s[1] <= '9' {
			return s[2:]
		}
		return s[1:]
	}
	return s[1:]
}

// roffSkipDelimited skips an escape's argument: from a delimiter (any
// character, mostly ') to the next, or [...].
func roffSkipDelimited(s []byte) []byte {
	if len(s) == 0 {
		return s
	}
	d := s[0]
	if d == '[' {
		d = ']'
	}
	if end := bytes.IndexByte(s[1:], d); end >= 0 {
		return s[2+end:]
	}
	return nil
}

// roffSpecial is the text of a special character: dashes, quotes, letters
// with accents (\('e, \(,c, as translated pages write them) and ligatures
// as the characters they are; any other as a space.
func roffSpecial(name []byte) []byte {
	switch string(name) {
	case "em", "en", "hy", "mi":
		return []byte("-")
	case "aq", "cq", "oq", "rq", "lq", "dq":
		return []byte("'")
	case "co":
		return []byte("©")
	}
	if l, ok := roffLetters[string(name)]; ok {
		return []byte(l)
	}
	if len(name) == 2 && (name[1] >= 'a' && name[1] <= 'z' || name[1] >= 'A' && name[1] <= 'Z') {
		if mark, ok := roffAccents[name[0]]; ok {
			return []byte(norm.NFC.String(string(name[1]) + mark))
		}
	}
	return []byte(" ")
}

// roffAccents are groff's accents of composite characters (\(ACCENT LETTER)
// as Unicode's combining marks.
var roffAccents = map[byte]string{
	'\'': "\u0301", '`': "\u0300", '^': "\u0302", '~': "\u0303", ':': "\u0308",
	',': "\u0327", 'v': "\u030c", 'o': "\u030a", '"': "\u030b", '.': "\u0307",
}

// roffLetters are groff's other letters and ligatures.
var roffLetters = map[string]string{
	"ss": "ß", "ae": "æ", "AE": "Æ", "oe": "œ", "OE": "Œ", "/o": "ø", "/O": "Ø",
	"/l": "ł", "/L": "Ł", "-D": "Đ", "Sd": "ð", "TP": "Þ", "Tp": "þ", ".i": "ı",
	"ff": "ff", "fi": "fi", "fl": "fl", "Fi": "ffi", "Fl": "ffl",
}

// looksRoff reports whether a document starting with head is the roff
// source of a manual page: after comments and blank lines its first line
// is a control line, and a title (.TH, .Dd, .Dt) or section heading (.SH,
// .Sh) or an include (.so) is among its first lines.
func looksRoff(head []byte) bool {
	first := true
	for len(head) > 0 {
		var l []byte
		if i := bytes.IndexByte(head, '\n'); i >= 0 {
			l, head = head[:i], head[i+1:]
		} else {
			l, head = head, nil
		}
		l = bytes.TrimRight(l, "\r \t")
		if len(l) == 0 {
			continue
		}
		if l[0] != '.' && l[0] != '\'' {
			if first {
				return false
			}
			continue
		}
		name, _ := roffRequest(l[1:])
		if len(name) == 0 {
			continue
		}
		first = false
		switch string(name) {
		case "TH", "Dd", "Dt", "SH", "Sh", "so":
			return true
		}
	}
	return false
}
