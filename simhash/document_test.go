package simhash

import (
	"bytes"
	"compress/gzip"
	"os"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func gzipped(t testing.TB, b []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	z := gzip.NewWriter(&buf)
	_, err := z.Write(b)
	require.NoError(t, err)
	require.NoError(t, z.Close())
	return buf.Bytes()
}

func utf16LE(s string) []byte {
	b := []byte{0xff, 0xfe}
	for _, u := range utf16.Encode([]rune(s)) {
		b = append(b, byte(u), byte(u>>8))
	}
	return b
}

func TestDocument(t *testing.T) {
	f, err := New(Options{Pipeline: PipelineV2, SkipNavigation: true})
	require.NoError(t, err)
	words := "The quick brown fox jumps over the lazy dog"
	page := "<!DOCTYPE html><html><nav>Home Next</nav><p>" + words + "</p></html>"
	bz, err := os.ReadFile("testdata/words.txt.bz2")
	require.NoError(t, err)
	png := []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR")
	elf := append([]byte("\x7fELF\x02\x01\x01"), make([]byte, 64)...)
	for _, c := range []struct {
		name    string
		in      []byte
		reading Reading
		want    string // the text it fingerprints as
		err     error
	}{
		{"text", []byte(words), ReadAuto, words, nil},
		{"html by content", []byte(page), ReadAuto, words, nil},
		{"html after space, any case", []byte("\n  <HTML><body><p>" + words), ReadAuto, words, nil},
		{"xhtml", []byte(`<?xml version="1.0"?><html xmlns="http://www.w3.org/1999/xhtml"><p>` + words + `</p></html>`), ReadAuto, words, nil},
		{"forced text", []byte(page), ReadText, "DOCTYPE html html nav Home Next nav p " + words + " p html", nil},
		{"forced html", []byte("plain <b>bold</b> text"), ReadHTML, "plain bold text", nil},
		{"not html: a word after <a", []byte("<abbr>-like text"), ReadAuto, "abbr like text", nil},
		{"gzip", gzipped(t, []byte(words)), ReadAuto, words, nil},
		{"gzip of html", gzipped(t, []byte(page)), ReadAuto, words, nil},
		{"bzip2", bz, ReadAuto, "hello bzip world, compressed words", nil},
		{"utf-16", utf16LE(words), ReadAuto, words, nil},
		{"png", png, ReadAuto, "", ErrBinary},
		{"elf", elf, ReadText, "", ErrBinary},
		{"gzip, forced text, is decompressed", gzipped(t, []byte(words)), ReadText, words, nil},
		{"empty", nil, ReadAuto, "", ErrEmpty},
		{"white space", []byte(" \n\t "), ReadText, "", ErrEmpty},
		{"punctuation", []byte("-- ... !!"), ReadAuto, "", ErrEmpty},
		{"html without words", []byte("<html><nav>menu</nav><script>x()</script></html>"), ReadAuto, "", ErrEmpty},
		{"empty gzip", gzipped(t, nil), ReadAuto, "", ErrEmpty},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := f.Document(bytes.NewReader(c.in), c.reading)
			if c.err != nil {
				assert.ErrorIs(t, err, c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, Format(f.Text(c.want)), Format(got))
		})
	}
	_, err = f.Document(bytes.NewReader([]byte{0x1f, 0x8b, 0, 0}), ReadAuto)
	assert.ErrorContains(t, err, "gzip")
}

func TestDecompressionBound(t *testing.T) {
	l := &limited{r: strings.NewReader(strings.Repeat("a", 100)), n: 10}
	b := make([]byte, 64)
	n, err := l.Read(b)
	assert.Equal(t, 0, n)
	assert.ErrorContains(t, err, "decompresses to more than")
	l = &limited{r: strings.NewReader("abc"), n: 10}
	n, err = l.Read(b)
	assert.NoError(t, err)
	assert.Equal(t, 3, n)
}

// FuzzDocument: any bytes are a fingerprint or an error, never a panic,
// and the same each time, read as every Reading (the latest pipeline's
// sniffing, HTML, XML and roff included).
func FuzzDocument(f *testing.F) {
	fp, err := New(Options{Pipeline: LatestPipeline, SkipNavigation: true})
	require.NoError(f, err)
	f.Add([]byte("plain words"), uint8(0))
	f.Add([]byte("<!doctype html><nav>x</nav><p>y z"), uint8(0))
	f.Add(gzipped(f, []byte("<p>compressed page</p>")), uint8(0))
	f.Add([]byte{0xfe, 0xff, 0, 'a', 0, ' ', 0, 'b'}, uint8(1))
	f.Add([]byte("<div role=navigation><div><p>a</div></div>b"), uint8(2))
	f.Add([]byte(".TH X 1\n.SH NAME\nx \\- \\fBy\\fR \\(em \\h'2'z\n.de A\n..\n"), uint8(0))
	f.Add([]byte(".Dd 2024\n.Sh NAME\n.Nm x\n.Op Fl a Ar b\n"), uint8(3))
	f.Add([]byte(`<?xml version="1.0"?><svg><metadata>m</metadata><text>label</text></svg>`), uint8(0))
	f.Fuzz(func(t *testing.T, b []byte, r uint8) {
		reading := Reading(r % 4)
		a, errA := fp.Document(bytes.NewReader(b), reading)
		c, errC := fp.Document(bytes.NewReader(b), reading)
		assert.Equal(t, errA == nil, errC == nil)
		assert.Equal(t, a, c)
	})
}

// TestForcedReadingDecompresses: a reading forced on compressed content
// reads what is inside (a .gz man page read as man), as ReadAuto does.
func TestForcedReadingDecompresses(t *testing.T) {
	f, err := New(Options{Pipeline: PipelineV3})
	require.NoError(t, err)
	page := []byte(".TH LS 1\n.SH NAME\nls \\- list directory contents\n.SH DESCRIPTION\nList information about the files.\n")
	for _, r := range []Reading{ReadText, ReadHTML, ReadMan} {
		want, err := f.Document(bytes.NewReader(page), r)
		require.NoError(t, err, r)
		got, err := f.Document(bytes.NewReader(gzipped(t, page)), r)
		require.NoError(t, err, "%v on gzip", r)
		assert.Equal(t, want, got, r)
	}
}
