package simhash

import (
	"bufio"
	"bytes"
	"compress/bzip2"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"sync"

	"golang.org/x/text/encoding/unicode"
	"golang.org/x/text/transform"
)

// Reading says how Document reads a document's bytes.
type Reading int

const (
	// ReadAuto decides by content: gzip and bzip2 are decompressed, a document
	// that starts as HTML does (as browsers sniff it) is read as HTML, any
	// other as plain text. From PipelineV3 on, XML (SVG images included) is
	// read as markup, and a manual page's roff source as ReadMan reads it.
	ReadAuto Reading = iota
	// ReadText reads plain text, as Bytes and Reader do.
	ReadText
	// ReadHTML reads HTML (and other markup), as Fingerprinter.HTML does.
	ReadHTML
	// ReadMan reads the roff source of a manual page (man(7) or mdoc(7)) as
	// the text man shows: requests, escapes and comments dropped.
	ReadMan
	// readXML reads XML's text; ReadAuto chooses it, a user forces
	// ReadHTML.
	readXML
)

func (r Reading) String() string {
	switch r {
	case ReadAuto:
		return "auto"
	case ReadText:
		return "text"
	case ReadHTML:
		return "html"
	case ReadMan:
		return "man"
	}
	return fmt.Sprintf("Reading(%d)", int(r))
}

// ParseReading reads a Reading's name: auto, text, html or man.
func ParseReading(s string) (Reading, error) {
	for _, r := range []Reading{ReadAuto, ReadText, ReadHTML, ReadMan} {
		if s == r.String() {
			return r, nil
		}
	}
	return 0, fmt.Errorf("%w: reading %q: want auto, text, html or man", ErrOptions, s)
}

var (
	// ErrBinary is Document's error for content that is not text (it
	// holds bytes that text does not, as grep -I decides).
	ErrBinary = errors.New("binary content, not text")
	// ErrEmpty is Document's error for a document with no words: every
	// such document would have the same fingerprint and be a
	// near-duplicate of every other.
	ErrEmpty = errors.New("no words to fingerprint")
)

// MaxDecompressed bounds what Document reads out of a compressed document,
// so that a small file cannot make it read without end.
const MaxDecompressed = 1 << 30

// sniffLen is how much of a document Document looks at to decide what it
// is.
const sniffLen = 8 << 10

// readers keeps the buffers DocumentTokens reads a document through: one
// of sniffLen bytes a document would be most of what a short one costs.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, sniffLen) }}

// Document returns the fingerprint of a document read from r as reading
// says. Compressed content (gzip, bzip2) is decompressed whatever the
// reading. With every format, content with bytes that text does not have
// (NUL and other control characters but tab, newline, form feed, carriage
// return and escape) in its first 8 KiB is ErrBinary, and a document
// without a word ErrEmpty; text with a UTF-16 byte order mark is decoded.
func (f *Fingerprinter) Document(r io.Reader, reading Reading) (uint64, error) {
	return f.DocumentTokens(r, reading, nil)
}

// DocumentTokens is Document that also calls token, if not nil, with the
// hash of each token of the text it reads, in order, stop words included:
// what a sketch of the same text (package sketch) is made of, in the same
// read.
func (f *Fingerprinter) DocumentTokens(r io.Reader, reading Reading, token func(hash uint64)) (uint64, error) {
	pooled := readers.Get().(*bufio.Reader)
	pooled.Reset(r)
	defer func() { pooled.Reset(nil); readers.Put(pooled) }()
	br := pooled
	{ // compressed content is decompressed whatever the reading: compressed bytes are no text
		head, _ := br.Peek(4)
		var z io.Reader
		var err error
		switch {
		case bytes.HasPrefix(head, []byte{0x1f, 0x8b}):
			z, err = gzip.NewReader(br)
		case bytes.HasPrefix(head, []byte("BZh")):
			z = bzip2.NewReader(br)
		}
		if err != nil {
			return 0, fmt.Errorf("gzip: %w", err)
		}
		if z != nil {
			br = bufio.NewReaderSize(&limited{r: z, n: MaxDecompressed}, sniffLen)
		}
	}
	head, err := br.Peek(sniffLen)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return 0, err
	}
	var in io.Reader = br
	if bom := utf16BOM(head); bom {
		in = transform.NewReader(br, unicode.BOMOverride(unicode.UTF8.NewDecoder()))
	} else if isBinary(head) {
		return 0, ErrBinary
	}
	s := f.get()
	defer f.put(s)
	s.onToken = token
	if reading == ReadAuto {
		reading = f.sniff(head)
	}
	switch reading {
	case readXML:
		in = f.xmlText(in)
	case ReadHTML:
		in = f.htmlText(in)
	case ReadMan:
		in = newRoffText(in)
	}
	if err := s.stream(in); err != nil {
		return 0, err
	}
	fp := s.sum()
	if s.features == 0 {
		return 0, ErrEmpty
	}
	return fp, nil
}

// sniff says how ReadAuto reads a document starting with head.
func (f *Fingerprinter) sniff(head []byte) Reading {
	switch {
	case looksHTML(head):
		return ReadHTML
	case f.opts.Pipeline < PipelineV3:
		return ReadText
	case looksXML(head):
		return readXML
	case looksRoff(head):
		return ReadMan
	}
	return ReadText
}

// limited reads at most n bytes of r, and fails past them.
type limited struct {
	r io.Reader
	n int64
}

func (l *limited) Read(p []byte) (int, error) {
	if l.n <= 0 {
		return 0, fmt.Errorf("decompresses to more than %d bytes", int64(MaxDecompressed))
	}
	if int64(len(p)) > l.n {
		p = p[:l.n+1]
	}
	n, err := l.r.Read(p)
	l.n -= int64(n)
	if l.n < 0 {
		return 0, fmt.Errorf("decompresses to more than %d bytes", int64(MaxDecompressed))
	}
	return n, err
}

// utf16BOM reports whether head starts with a UTF-16 byte order mark.
func utf16BOM(head []byte) bool {
	return bytes.HasPrefix(head, []byte{0xfe, 0xff}) || bytes.HasPrefix(head, []byte{0xff, 0xfe})
}

// isBinary reports whether head holds a byte that text does not (WHATWG's
// binary data bytes: the C0 controls but tab, newline, form feed,
// carriage return and escape).
func isBinary(head []byte) bool {
	for _, c := range head {
		if c < 0x20 && c != '\t' && c != '\n' && c != '\f' && c != '\r' && c != 0x1b {
			return true
		}
	}
	return false
}

// htmlStarts are the starts by which WHATWG's sniffing takes a document
// for HTML, after white space, in any case, then a space or '>'.
var htmlStarts = [][]byte{
	[]byte("<!doctype html"), []byte("<html"), []byte("<head"), []byte("<script"),
	[]byte("<iframe"), []byte("<h1"), []byte("<div"), []byte("<font"), []byte("<table"),
	[]byte("<a"), []byte("<style"), []byte("<title"), []byte("<b"), []byte("<body"),
	[]byte("<br"), []byte("<p"), []byte("<!--"),
}

// looksHTML reports whether a document starting with head is HTML: it
// starts as htmlStarts say, or is XHTML (an XML declaration, then an html
// element within the first KiB).
func looksHTML(head []byte) bool {
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	head = bytes.TrimLeft(head, " \t\n\f\r")
	if len(head) == 0 || head[0] != '<' {
		return false // every start below is a tag's: no need to lower the rest
	}
	lower := bytes.ToLower(head[:min(len(head), 1024)])
	for _, s := range htmlStarts {
		if bytes.HasPrefix(lower, s) {
			if len(lower) == len(s) {
				return true
			}
			if c := lower[len(s)]; c == ' ' || c == '>' || (s[1] == '!' && s[2] == '-') {
				return true
			}
		}
	}
	return bytes.HasPrefix(lower, []byte("<?xml")) && bytes.Contains(lower, []byte("<html"))
}

// looksXML reports whether a document starting with head is XML: an XML
// declaration, or an svg root (SVG is often written without one).
func looksXML(head []byte) bool {
	head = bytes.TrimPrefix(head, []byte("\xef\xbb\xbf"))
	head = bytes.TrimLeft(head, " \t\n\f\r")
	if len(head) == 0 || head[0] != '<' {
		return false
	}
	lower := bytes.ToLower(head[:min(len(head), 16)])
	return bytes.HasPrefix(lower, []byte("<?xml ")) || bytes.HasPrefix(lower, []byte("<svg ")) ||
		bytes.HasPrefix(lower, []byte("<svg>")) || bytes.HasPrefix(lower, []byte("<!doctype svg"))
}
