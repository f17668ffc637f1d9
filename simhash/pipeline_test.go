package simhash

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestIsNumber(t *testing.T) {
	for tok, want := range map[string]bool{
		"0": true, "2026": true, "٣٤": true, "१२": true,
		"": false, "v1": false, "1st": false, "x": false, "3.5": false,
	} {
		assert.Equal(t, want, isNumber([]byte(tok)), tok)
	}
}

// renumbered returns a manual page whose sections are numbered from
// chapter, its headings and table of contents repeating the numbers.
func renumbered(chapter int) string {
	var b strings.Builder
	body := text(7, 400)
	words := strings.Fields(body)
	for s := 1; s <= 8; s++ {
		fmt.Fprintf(&b, "Contents %d.%d.%d\n", chapter, 2, s)
	}
	for s := 1; s <= 8; s++ {
		fmt.Fprintf(&b, "Section %d.%d.%d %s\n", chapter, 2, s, strings.Join(words[s*40:s*40+40], " "))
		fmt.Fprintf(&b, "See also %d.%d.%d and %d.%d.%d. release %d.%d\n", chapter, 1, s, chapter, 3, s, chapter, s)
	}
	return b.String()
}

// TestPipelineV2Numbers: pages the same but for their numbers are closer
// under V2 than under V1, and V1's fingerprints stay what they were.
func TestPipelineV2Numbers(t *testing.T) {
	v1 := Default()
	v2, err := New(Options{Pipeline: PipelineV2})
	require.NoError(t, err)
	a, b := renumbered(38), renumbered(36)
	d1 := Distance(v1.Text(a), v1.Text(b))
	d2 := Distance(v2.Text(a), v2.Text(b))
	t.Logf("renumbered page: distance %d under v1, %d under v2", d1, d2)
	assert.Less(t, d2, d1)
	assert.LessOrEqual(t, 2*d2, d1, "numbers decide much less")

	// Numbers still count: a page of numbers alone has a fingerprint,
	// and one number changed among words moves it.
	assert.NotZero(t, v2.Text("1 2 3 4 5"))
	assert.NotEqual(t, v2.Text("1 2 3 4 5"), v2.Text("1 2 3 4 6"))
	// Every weighting gives numbers less weight, the same with counts kept.
	for _, w := range []Weighting{LogTF, Binary} {
		f, err := New(Options{Pipeline: PipelineV2, Weighting: w})
		require.NoError(t, err)
		g, err := New(Options{Weighting: w})
		require.NoError(t, err)
		assert.LessOrEqual(t, Distance(f.Text(a), f.Text(b)), Distance(g.Text(a), g.Text(b)), w)
	}

	// V1 is the zero value and unchanged: the fingerprint of a fixed text,
	// as the code before pipelines had versions gave it.
	assert.Equal(t, "0x03d293828e13d3a1", Format(v1.Text("The quick brown fox jumps over the lazy dog 42 times in 2007")))
	// So is V2, which indexes made before V3 keep using.
	lv2, err := New(Options{Pipeline: PipelineV2, Weighting: LogTF})
	require.NoError(t, err)
	assert.Equal(t, "0x03769b54071342a1", Format(v2.Text("The quick brown fox jumps over the lazy dog 42 times in 2007")))
	assert.Equal(t, "0xb5fd41e72d8e0ffa", Format(v2.Text(a)))
	assert.Equal(t, "0xb5fd51e72d8e9eec", Format(lv2.String(b)))
	_, err = New(Options{Pipeline: LatestPipeline + 1})
	assert.ErrorIs(t, err, ErrOptions)
	assert.Equal(t, "v2", PipelineV2.String())
}

// releaseNotes is a short page of a kind every version has one of.
func releaseNotes(v string) string {
	return fmt.Sprintf("Project %[1]s release notes. Released 26 September 2016. Project %[1]s fixes a security "+
		"issue and several bugs in the previous release. Upgrade to %[1]s as soon as you can.", v)
}

// TestPipelineV3Numbers: V3 weighs numbers as V2 in a long document, and
// more in a short one, where they tell pages of a template apart.
func TestPipelineV3Numbers(t *testing.T) {
	for _, w := range []Weighting{TF, LogTF} {
		v2, err := New(Options{Pipeline: PipelineV2, Weighting: w})
		require.NoError(t, err)
		v3, err := New(Options{Pipeline: PipelineV3, Weighting: w})
		require.NoError(t, err)
		long := strings.Repeat(renumbered(38), 2)
		require.GreaterOrEqual(t, len(tokens(Words{}, long)), NumberFeatures*10)
		assert.Equal(t, Format(v2.Text(long)), Format(v3.String(long)), "%v: a long page", w)

		a, b := releaseNotes("1.8.15"), releaseNotes("1.9.10")
		d2, d3 := Distance(v2.Text(a), v2.Text(b)), Distance(v3.String(a), v3.String(b))
		t.Logf("%v: release notes of two versions: distance %d under v2, %d under v3", w, d2, d3)
		assert.Greater(t, d3, d2, w)
		assert.Greater(t, d3, 3, "%v: not near-duplicates at the default distance", w)
	}
}

// TestSkipNavigation: with SkipNavigation a page is read without its
// navigation; without, it is read all.
func TestSkipNavigation(t *testing.T) {
	v1 := Default()
	v2, err := New(Options{Pipeline: PipelineV2, SkipNavigation: true})
	require.NoError(t, err)
	content := "The quick brown fox jumps over the lazy dog"
	for name, page := range map[string]string{
		"nav":          `<nav><a href=/>Home</a> <a href=/next>Next chapter</a></nav><main><p>%s</p></main>`,
		"aside":        `<p>%s</p><aside>Related pages and theme switcher</aside>`,
		"page header":  `<body><header>Site name and search</header><p>%s</p><footer>Copyright 2026 release 5.10</footer></body>`,
		"role":         `<div role="navigation">Previous | Up | Next</div><div role="search"><input> Search the docs</div><p>%s</p><div class="x" role="contentinfo">Built with a generator<br>version 3</div>`,
		"banner":       `<div role="Banner"><h1>Manual</h1></div><p>%s</p>`,
		"unclosed nav": `<nav><ul><li>One<li>Two</ul></nav><p>%s`,
		"unknown tags": `<nav><my-menu>Menu items</my-menu> more menu</nav><p>%s</p>`,
	} {
		t.Run(name, func(t *testing.T) {
			html := fmt.Sprintf(page, content)
			got, err := v2.HTML(strings.NewReader(html))
			require.NoError(t, err)
			assert.Equal(t, v2.Text(content), got)
			old, err := v1.HTML(strings.NewReader(html))
			require.NoError(t, err)
			assert.NotEqual(t, v1.Text(content), old, "kept without SkipNavigation")
		})
	}
	// An article's own header and footer are its content.
	html := `<nav>Menu</nav><article><header><h1>Title words</h1></header><p>body text here</p><footer>by the author</footer></article>`
	got, err := v2.HTML(strings.NewReader(html))
	require.NoError(t, err)
	assert.Equal(t, v2.Text("Title words body text here by the author"), got)
	// A stray end tag closes nothing; deep nesting stays bounded.
	got, err = v2.HTML(strings.NewReader(`</nav><p>` + content + `</p>`))
	require.NoError(t, err)
	assert.Equal(t, v2.Text(content), got)
	deep := strings.Repeat("<div>", 10_000) + content + strings.Repeat("</div>", 10_000)
	got, err = v2.HTML(strings.NewReader(deep))
	require.NoError(t, err)
	assert.Equal(t, v2.Text(content), got)
}
