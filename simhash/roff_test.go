package simhash

import (
	"bytes"
	"io"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestRoffText(t *testing.T) {
	for _, c := range []struct {
		name, roff, want string
	}{
		{"man page", `.\" Copyright and licence: a comment
.TH LS 1 "March 2024" "GNU coreutils 9.4" "User Commands"
.SH NAME
ls \- list directory contents
.SH SYNOPSIS
.B ls
[\fIOPTION\fR]... [\fIFILE\fR]...
.SH DESCRIPTION
.\" another comment
List information about the FILEs (the current directory by default).
.TP
\fB\-a\fR, \fB\-\-all\fR
do not ignore entries starting with .
.IP \(bu 4
a bullet item
.PP
.BR dir (1),
.I "quoted words"
`, `LS 1 March 2024 GNU coreutils 9.4 User Commands NAME ls - list directory contents
SYNOPSIS ls [OPTION]... [FILE]... DESCRIPTION List information about the FILEs (the current
directory by default). -a, --all do not ignore entries starting with . a bullet item dir (1), quoted words`},
		{"ig with a comment", `.ig \" ignored to the next "..", not to a line ".\\""
this is not shown
..
.TH SSH-COPY-ID 1
shown text
`, `SSH-COPY-ID 1 shown text`},
		{"macro ended with spaces after the dot", `.TH RTCWAKE 8
.if \n[.g] \{\
.  am URL
.    ad l
.  .
.\}
.SH NAME
rtcwake \- enter a system sleep state
`, `RTCWAKE 8 NAME rtcwake - enter a system sleep state`},
		{"accented letters of a translated page", `.TH DPKG 1
predefini\(,c\(~ao de v\('arias \(:uber Stra\(ssen \(oangstr\(/om \(zz
`, `DPKG 1 predefinição de várias über Straßen ångstrøm`},
		{"mdoc", `.Dd $Mdocdate: May 1 2023 $
.Dt CAT 1
.Os
.Sh NAME
.Nm cat
.Nd concatenate and print files
.Sh SYNOPSIS
.Nm cat
.Op Fl benstuv
.Op Ar
.Bl -tag -width Ds
.It Fl b
Number the lines.
.El
`, `$Mdocdate: May 1 2023 $ CAT 1 NAME cat concatenate and print files SYNOPSIS cat benstuv b Number the lines.`},
		{"definitions and ignored blocks", `.TH X 7
.de XX
.ft B
hidden macro body
..
.ig
hidden text
..
.ig END
hidden too
.END
shown text\" trailing comment
`, "X 7 shown text"},
		{"escapes", `.TH E 1
a\ b\~c\0d\|e\^f \e \(em \[aq]x\[aq] \*(lqq\*(rq \*[str] \n(PD \s-2small\s0 \s+1big\s0 \h'2m'g \w'width'h \kxi \fBbold\fP \f(CWmono\f[] \f[B]b\f[]
end\c
ing \&.dot \%hy\-phen \zz last\
joined
`, `E 1 a b c d e f \ - 'x' q small big g h i bold mono b ending .dot hy-phen z lastjoined`},
		{"quoted arguments", `.TH Q 1
.SH "SEE ALSO"
.BI "open " file " now"
.IP "tag words" 8
`, "Q 1 SEE ALSO open file now tag words"},
		{"unterminated", ".TH U 1\n.BI \"open\n\\[xx\n\\h'2\nend \\", "U 1 open end"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := io.ReadAll(newRoffText(strings.NewReader(c.roff)))
			require.NoError(t, err)
			assert.Equal(t, tokens(Words{}, c.want), tokens(Words{}, string(got)), "read as %q", got)
		})
	}
}

func TestRoffLongLine(t *testing.T) {
	long := ".TH L 1\n" + strings.Repeat("word ", 3*roffLineMax/5) + "\n.B end\n"
	got, err := io.ReadAll(newRoffText(strings.NewReader(long)))
	require.NoError(t, err)
	toks := tokens(Words{}, string(got))
	require.Equal(t, 2+3*roffLineMax/5+1, len(toks))
	assert.Equal(t, []string{"l", "1", "word"}, toks[:3])
	assert.Equal(t, []string{"word", "end"}, toks[len(toks)-2:])
	for _, w := range toks[2 : len(toks)-1] {
		require.Equal(t, "word", w)
	}
}

func TestLooksRoff(t *testing.T) {
	for _, c := range []struct {
		head string
		want bool
	}{
		{".TH LS 1\n.SH NAME\n", true},
		{"'\\\" t\n.\\\" comment\n\n.TH X 1\n", true},
		{".Dd May 1 2023\n.Dt CAT 1\n", true},
		{".so man1/other.1\n", true},
		{".\\\" only a comment\n.de XX\n..\n.TH X 1\n", true},
		{"Some text\n.TH X 1\n", false},
		{". a list item written with dots\n. another\n", false},
		{"...and so on\n", false},
		{"", false},
	} {
		assert.Equal(t, c.want, looksRoff([]byte(c.head)), "%q", c.head)
	}
}

// TestReadingByPipeline: pipeline v3 reads manual pages and XML by their
// content; v2 reads them as text, as it always has, so that an index of v2
// fingerprints keeps matching its own.
func TestReadingByPipeline(t *testing.T) {
	man := ".TH CAT 1 2024\n.SH NAME\ncat \\- concatenate files and print on the standard output\n"
	manText := "CAT 1 2024 NAME cat - concatenate files and print on the standard output"
	svg := `<?xml version="1.0"?><svg xmlns="http://www.w3.org/2000/svg"><metadata><rdf:RDF>image/svg+xml</rdf:RDF></metadata><path d="M 10 20 L 30 40"/></svg>`
	label := `<svg width="10"><style>.a{fill:red}</style><text x="1" y="2">Maybe uninitialized</text></svg>`
	docbook := `<?xml version="1.0" encoding="utf-8"?><chapter><title>Getting started</title><para>Install the <command>tool</command> first.</para></chapter>`
	v2, err := New(Options{Pipeline: PipelineV2})
	require.NoError(t, err)
	v3, err := New(Options{Pipeline: PipelineV3})
	require.NoError(t, err)
	for _, c := range []struct {
		name    string
		f       *Fingerprinter
		in      string
		reading Reading
		want    string
		err     error
	}{
		{"v3 man page", v3, man, ReadAuto, manText, nil},
		{"v3 man page gzipped", v3, string(gzipped(t, []byte(man))), ReadAuto, manText, nil},
		{"v3 man page read as text", v3, man, ReadText, man, nil},
		{"v2 man page", v2, man, ReadAuto, man, nil},
		{"v2 forced man", v2, man, ReadMan, manText, nil},
		{"v3 .so page", v3, ".so man1/cat.1\n", ReadAuto, "", ErrEmpty},
		{"v3 svg drawing", v3, svg, ReadAuto, "", ErrEmpty},
		{"v2 svg drawing", v2, svg, ReadAuto, svg, nil},
		{"v3 svg labels", v3, label, ReadAuto, "Maybe uninitialized", nil},
		{"v3 xml", v3, docbook, ReadAuto, "Getting started Install the tool first.", nil},
		{"v2 xml", v2, docbook, ReadAuto, docbook, nil},
		{"v3 xhtml is html", v3, `<?xml version="1.0"?><html><body><svg><text>icon</text></svg><p>words here</p></body></html>`, ReadAuto, "words here", nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.f.Document(bytes.NewReader([]byte(c.in)), c.reading)
			if c.err != nil {
				assert.ErrorIs(t, err, c.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, Format(c.f.Text(c.want)), Format(got))
		})
	}
}

func TestParsePipeline(t *testing.T) {
	for p := PipelineV1; p <= LatestPipeline; p++ {
		got, err := ParsePipeline(p.String())
		require.NoError(t, err)
		assert.Equal(t, p, got)
	}
	_, err := ParsePipeline("v9")
	assert.ErrorIs(t, err, ErrOptions)
	assert.ErrorContains(t, err, `"v9": want v1, v2 or v3`)
}
