package simhash

import (
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/cases"
	"golang.org/x/text/unicode/norm"
)

// Tokenizer splits text into tokens. Tokenize calls emit once per token, in
// order; the slice passed to emit is valid only during that call. A Tokenizer
// used by a Fingerprinter must be safe for concurrent use when the
// Fingerprinter is.
//
// Readers are fed to Tokenize in chunks cut after a character that cannot be
// inside a token (a space, ASCII or Unicode punctuation such as "，" or "。"),
// so a token never spans two chunks unless 64 KiB of text hold no such
// character. A word segmenter for a
// language written without spaces (a Chinese dictionary segmenter, say)
// plugs in here.
type Tokenizer interface {
	Tokenize(text []byte, emit func(token []byte))
}

// Words is the default Tokenizer. A token is a maximal run of letters, marks
// and digits of any script, normalised to NFKC and case-folded (full Unicode
// folding, so "Straße" and "STRASSE" are one token). Text in Han, Hiragana,
// Katakana and Hangul, which needs a dictionary to split into words, becomes
// overlapping character bigrams instead ("近似重复" gives "近似", "似重", "重复"; a
// lone character stands as itself), the dictionary-free scheme of CJK search
// engines. Everything else separates tokens.
type Words struct{}

// Tokenize implements Tokenizer.
func (Words) Tokenize(text []byte, emit func(token []byte)) {
	var s wordScanner
	s.scan(text, emit)
}

// isWordASCII marks the ASCII bytes that belong to words.
var isWordASCII = func() (t [128]bool) {
	for c := '0'; c <= '9'; c++ {
		t[c] = true
	}
	for c := 'a'; c <= 'z'; c++ {
		t[c] = true
		t[c-'a'+'A'] = true
	}
	return t
}()

// lowerASCII maps ASCII capitals to small letters and every other byte to
// itself.
var lowerASCII = func() (t [256]byte) {
	for i := range t {
		t[i] = byte(i)
	}
	for c := 'A'; c <= 'Z'; c++ {
		t[c] = byte(c - 'A' + 'a')
	}
	return t
}()

// isCJK reports whether r is in a script written without spaces between
// words.
func isCJK(r rune) bool {
	return unicode.Is(unicode.Han, r) || unicode.Is(unicode.Hiragana, r) ||
		unicode.Is(unicode.Katakana, r) || unicode.Is(unicode.Hangul, r)
}

// isWordRune reports whether a non-CJK rune belongs to words.
func isWordRune(r rune) bool {
	return unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.Is(unicode.M, r)
}

type wordScanner struct {
	buf   []byte
	fold  cases.Caser
	folds bool
}

func (s *wordScanner) scan(text []byte, emit func([]byte)) {
	start, ascii := -1, true // current word: start offset, whether all ASCII
	cjkPrev, cjkRun := -1, 0 // offset of the previous CJK rune, length of the run
	endWord := func(end int) {
		if start >= 0 {
			s.emitWord(text[start:end], ascii, emit)
			start, ascii = -1, true
		}
	}
	endCJK := func() {
		if cjkRun == 1 {
			_, n := utf8.DecodeRune(text[cjkPrev:])
			s.emitNormal(text[cjkPrev:cjkPrev+n], false, emit)
		}
		cjkPrev, cjkRun = -1, 0
	}
	for i := 0; i < len(text); {
		c := text[i]
		if c < utf8.RuneSelf {
			if isWordASCII[c] {
				if cjkRun > 0 {
					endCJK()
				}
				if start >= 0 {
					i++
					continue
				}
				// Fast path: an ASCII word is lower-cased and emitted in one
				// pass, unless a non-ASCII letter continues it.
				j := i + 1
				for j < len(text) && text[j] < utf8.RuneSelf && isWordASCII[text[j]] {
					j++
				}
				if j == len(text) || text[j] < utf8.RuneSelf {
					s.emitWord(text[i:j], true, emit)
					i = j
					continue
				}
				start = i
				i = j
				continue
			} else {
				endWord(i)
				if cjkRun > 0 {
					endCJK()
				}
			}
			i++
			continue
		}
		r, n := utf8.DecodeRune(text[i:])
		switch {
		case isCJK(r):
			endWord(i)
			if cjkRun > 0 {
				s.emitNormal(text[cjkPrev:i+n], false, emit)
			}
			cjkPrev = i
			cjkRun++
		case isWordRune(r):
			if cjkRun > 0 {
				endCJK()
			}
			if start < 0 {
				start = i
			}
			ascii = false
		default:
			endWord(i)
			if cjkRun > 0 {
				endCJK()
			}
		}
		i += n
	}
	endWord(len(text))
	if cjkRun > 0 {
		endCJK()
	}
}

// emitWord lower-cases an ASCII word in place of NFKC and folding (they are
// the identity on ASCII but for case) and normalises anything else.
func (s *wordScanner) emitWord(w []byte, ascii bool, emit func([]byte)) {
	if !ascii {
		s.emitNormal(w, true, emit)
		return
	}
	s.buf = append(s.buf[:0], w...)
	for i, c := range s.buf {
		s.buf[i] = lowerASCII[c]
	}
	emit(s.buf)
}

// emitNormal applies NFKC and, when fold is set, case folding. CJK characters
// have no case, so their bigrams skip the folding (and its allocation).
func (s *wordScanner) emitNormal(w []byte, fold bool, emit func([]byte)) {
	if !norm.NFKC.IsNormal(w) {
		s.buf = norm.NFKC.Append(s.buf[:0], w...)
		w = s.buf
	}
	if !fold {
		emit(w)
		return
	}
	if !s.folds {
		s.fold, s.folds = cases.Fold(), true
	}
	s.fold.Reset()
	out := s.fold.Bytes(w)
	emit(out)
}
