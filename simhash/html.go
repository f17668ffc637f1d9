package simhash

import (
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"
)

// HTML returns the fingerprint of the visible text of an HTML document read
// from r: character references are decoded; markup, comments and the contents
// of script, style, template, noscript and similar elements are skipped.
// Block-level elements separate words; inline ones (b, a, span, ...) do not,
// so "<b>W</b>ord" is one word. The page streams through in chunks.
//
// With Options.SkipNavigation, the page's navigation is skipped too: nav
// and aside elements, header and footer elements of the page (not those of
// an article or section), and elements whose ARIA role is navigation,
// search, banner or contentinfo.
func (f *Fingerprinter) HTML(r io.Reader) (uint64, error) {
	s := f.get()
	defer f.put(s)
	if err := s.stream(f.htmlText(r)); err != nil {
		return 0, err
	}
	return s.sum(), nil
}

// htmlText returns a reader of the visible text of the HTML read from r,
// as f's pipeline reads it.
func (f *Fingerprinter) htmlText(r io.Reader) io.Reader {
	return &htmlText{z: html.NewTokenizer(r), nav: f.opts.SkipNavigation}
}

// xmlText returns a reader of the text of the XML read from r: as
// htmlText, but an svg element's text is shown (an SVG image's labels) and
// metadata's is not.
func (f *Fingerprinter) xmlText(r io.Reader) io.Reader {
	return &htmlText{z: html.NewTokenizer(r), nav: f.opts.SkipNavigation, xml: true}
}

// htmlText is an io.Reader of the visible text of an HTML token stream.
// Without nav it counts the depth of hidden elements; with
// nav it keeps a stack of the open elements, so that the end of one found
// by its attributes (a role) is known, and an end tag closes the elements
// opened inside it and left open, as browsers do.
type htmlText struct {
	z       *html.Tokenizer
	nav     bool          // skip navigation
	xml     bool          // XML: svg shown, metadata hidden
	hidden  int           // open elements whose text is not shown
	section int           // open sectioning elements (article, aside, main, nav, section)
	open    []openElement // with nav
	pending []byte        // text not yet read
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
			name, hasAttr := h.z.TagName()
			a := atom.Lookup(name)
			if !inlineElement[a] {
				h.pending = space
			}
			switch {
			case !h.nav:
				if h.hiddenTag(a, name) {
					h.hidden++
				}
			case voidElement[a] || len(h.open) == maxOpen:
			default:
				e := openElement{a: a, section: sectioningElement[a]}
				if a == 0 {
					e.name = string(name)
				}
				e.hides = h.hiddenTag(a, name) || navigationElement[a] ||
					((a == atom.Header || a == atom.Footer) && h.section == 0) ||
					(hasAttr && navigationRole(h.z))
				h.push(e)
			}
		case html.EndTagToken:
			name, _ := h.z.TagName()
			a := atom.Lookup(name)
			if !inlineElement[a] {
				h.pending = space
			}
			switch {
			case h.nav:
				h.close(a, name)
			case h.hiddenTag(a, name) && h.hidden > 0:
				h.hidden--
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

// hiddenTag reports whether the element a (named name) hides its text.
func (h *htmlText) hiddenTag(a atom.Atom, name []byte) bool {
	if h.xml {
		return a == atom.Script || a == atom.Style || string(name) == "metadata"
	}
	return hiddenElement[a]
}

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

type openElement struct {
	name    string // the tag name, for elements atom does not know
	a       atom.Atom
	hides   bool
	section bool
}

// maxOpen bounds the stack: deeper elements are read as if not opened, so
// memory stays bounded on any page.
const maxOpen = 512

func (h *htmlText) push(e openElement) {
	h.open = append(h.open, e)
	if e.hides {
		h.hidden++
	}
	if e.section {
		h.section++
	}
}

// close pops the innermost open element named a (name when atom does not
// know it) and every element opened inside it; an end tag matching none is
// ignored.
func (h *htmlText) close(a atom.Atom, name []byte) {
	for i := len(h.open) - 1; i >= 0; i-- {
		e := h.open[i]
		if e.a != a || (a == 0 && e.name != string(name)) {
			continue
		}
		for _, e := range h.open[i:] {
			if e.hides {
				h.hidden--
			}
			if e.section {
				h.section--
			}
		}
		h.open = h.open[:i]
		return
	}
}

// navigationRole reports whether the tag being read has an ARIA role of
// navigation: navigation, search, banner or contentinfo.
func navigationRole(z *html.Tokenizer) bool {
	for {
		k, v, more := z.TagAttr()
		if string(k) == "role" {
			for _, r := range strings.Fields(strings.ToLower(string(v))) {
				switch r {
				case "navigation", "search", "banner", "contentinfo":
					return true
				}
			}
		}
		if !more {
			return false
		}
	}
}

// navigationElement lists the elements of navigation SkipNavigation skips
// wherever they are.
var navigationElement = map[atom.Atom]bool{atom.Nav: true, atom.Aside: true}

// sectioningElement lists the elements inside which header and footer
// belong to the content, not the page (HTML-AAM's banner and contentinfo).
var sectioningElement = map[atom.Atom]bool{
	atom.Article: true, atom.Aside: true, atom.Main: true, atom.Nav: true, atom.Section: true,
}

// voidElement lists elements that have no end tag.
var voidElement = map[atom.Atom]bool{
	atom.Area: true, atom.Base: true, atom.Br: true, atom.Col: true, atom.Embed: true,
	atom.Hr: true, atom.Img: true, atom.Input: true, atom.Link: true, atom.Meta: true,
	atom.Source: true, atom.Track: true, atom.Wbr: true, atom.Param: true,
}
