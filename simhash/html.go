package simhash

import (
	"io"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// HTML returns the fingerprint of the visible text of an HTML document read
// from r: character references are decoded; markup, comments and the contents
// of script, style, template, noscript and similar elements are skipped.
// Block-level elements separate words; inline ones (b, a, span, ...) do not,
// so "<b>W</b>ord" is one word. The page streams through in chunks.
func (f *Fingerprinter) HTML(r io.Reader) (uint64, error) {
	s := f.get()
	defer f.put(s)
	if err := s.stream(&htmlText{z: html.NewTokenizer(r)}); err != nil {
		return 0, err
	}
	return s.sum(), nil
}

// htmlText is an io.Reader of the visible text of an HTML token stream.
type htmlText struct {
	z       *html.Tokenizer
	hidden  int    // depth inside elements whose text is not shown
	pending []byte // text not yet read
}

func (h *htmlText) Read(p []byte) (int, error) {
	for len(h.pending) == 0 {
		switch h.z.Next() {
		case html.ErrorToken:
			if err := h.z.Err(); err != io.EOF {
				return 0, err
			}
			return 0, io.EOF
		case html.TextToken:
			if h.hidden == 0 {
				h.pending = h.z.Text()
			}
		case html.StartTagToken:
			name, _ := h.z.TagName()
			a := atom.Lookup(name)
			if hiddenElement[a] {
				h.hidden++
			}
			if !inlineElement[a] {
				h.pending = space
			}
		case html.EndTagToken:
			name, _ := h.z.TagName()
			a := atom.Lookup(name)
			if hiddenElement[a] && h.hidden > 0 {
				h.hidden--
			}
			if !inlineElement[a] {
				h.pending = space
			}
		case html.SelfClosingTagToken:
			name, _ := h.z.TagName()
			if !inlineElement[atom.Lookup(name)] {
				h.pending = space
			}
		}
	}
	n := copy(p, h.pending)
	h.pending = h.pending[n:]
	return n, nil
}

var space = []byte{' '}

// hiddenElement lists elements whose text content is not rendered as text.
var hiddenElement = map[atom.Atom]bool{
	atom.Script: true, atom.Style: true, atom.Template: true, atom.Noscript: true,
	atom.Head: false, atom.Iframe: true, atom.Object: true, atom.Svg: true, atom.Math: true,
	atom.Textarea: false, atom.Select: false,
}

// inlineElement lists phrasing elements that do not break words.
var inlineElement = map[atom.Atom]bool{
	atom.A: true, atom.Abbr: true, atom.B: true, atom.Bdi: true, atom.Bdo: true,
	atom.Cite: true, atom.Code: true, atom.Data: true, atom.Dfn: true, atom.Em: true,
	atom.Font: true, atom.I: true, atom.Kbd: true, atom.Mark: true, atom.Q: true,
	atom.S: true, atom.Samp: true, atom.Small: true, atom.Span: true, atom.Strong: true,
	atom.Sub: true, atom.Sup: true, atom.Time: true, atom.U: true, atom.Var: true,
}
