package simhash

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
	"testing/iotest"
	"unicode/utf16"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func tokens(tok Tokenizer, s string) []string {
	var out []string
	tok.Tokenize([]byte(s), func(t []byte) { out = append(out, string(t)) })
	return out
}

func TestWords(t *testing.T) {
	tests := []struct {
		name, in string
		want     []string
	}{
		{"ascii case folded", "Hello, WORLD! it's 42", []string{"hello", "world", "it", "s", "42"}},
		{"full case folding", "Straße STRASSE", []string{"strasse", "strasse"}},
		{"nfkc fullwidth and ligature", "ｆｕｌｌ ﬁne", []string{"full", "fine"}},
		{"accents and marks kept", "naïve café", []string{"naïve", "café"}},
		{"cyrillic and greek", "Привет ΚΌΣΜΕ", []string{"привет", "κόσμε"}},
		{"chinese bigrams", "近似重复检测", []string{"近似", "似重", "重复", "复检", "检测"}},
		{"single cjk char stands alone", "a 中 b", []string{"a", "中", "b"}},
		{"japanese mixed scripts", "日本語のテキスト", []string{"日本", "本語", "語の", "のテ", "テキ", "キス", "スト"}},
		{"korean", "한국어", []string{"한국", "국어"}},
		{"cjk next to latin", "使用Go语言", []string{"使用", "go", "语言"}},
		{"halfwidth katakana normalised", "ｶﾀｶﾅ", []string{"カタ", "タカ", "カナ"}},
		{"only separators", " ,.;\n\t", nil},
		{"empty", "", nil},
		{"invalid utf8 separates", "ab\xffcd", []string{"ab", "cd"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, tokens(Words{}, tc.in))
		})
	}
}

func TestDistance(t *testing.T) {
	assert.Equal(t, 0, Distance(0, 0))
	assert.Equal(t, 64, Distance(0, ^uint64(0)))
	assert.Equal(t, 3, Distance(0b1011, 0b0000))
}

func TestFormatParse(t *testing.T) {
	for _, v := range []uint64{0, 1, 0xdeadbeef, 1 << 63, ^uint64(0)} {
		s := Format(v)
		require.Len(t, s, 18)
		got, err := ParseBareHex(s)
		require.NoError(t, err)
		assert.Equal(t, v, got)
		got, err = ParseBareHex(s[2:])
		require.NoError(t, err)
		assert.Equal(t, v, got)
		got, err = Parse(fmt.Sprint(v))
		require.NoError(t, err)
		assert.Equal(t, v, got)
		got, err = Parse(s) // what Format writes, Parse reads
		require.NoError(t, err)
		assert.Equal(t, v, got)
	}
	assert.Equal(t, "0x00000000000000ff", Format(255))
	ok := []struct {
		in   string
		want uint64
	}{{" 42 ", 42}, {"0XFF", 255}, {"0x1", 1}, {"18446744073709551615", ^uint64(0)},
		{"04682519354896071", 4682519354896071}, {"468251935489607", 468251935489607},
		// Decimal of exactly 16 digits is decimal: about 1 random fingerprint
		// in 2,000 is written so.
		{"4682519354896071", 4682519354896071}, {"1234567890123456", 1234567890123456}}
	for _, tc := range ok {
		got, err := Parse(tc.in)
		require.NoError(t, err, tc.in)
		assert.Equal(t, tc.want, got, tc.in)
	}
	bad := []struct{ in, msg string }{
		{"", "empty"},
		{"18446744073709551616", "larger than 2^64-1"},
		{"-1", "unsigned decimal"},
		{"0x", "hex digits after 0x"},
		{"0x12345678901234567", "hex digits after 0x"},
		{"0xzz", "hex digits after 0x"},
		{"deadbeef", "write it as 0xdeadbeef"},
		{"12 34", "unsigned decimal"},
		{"0123456789abcdef", "write it as 0x0123456789abcdef"},
	}
	for _, tc := range bad {
		_, err := Parse(tc.in)
		require.Error(t, err, tc.in)
		assert.ErrorIs(t, err, ErrSyntax)
		assert.Contains(t, err.Error(), tc.msg)
		assert.Contains(t, err.Error(), fmt.Sprintf("%q", tc.in)[1:len(fmt.Sprintf("%q", tc.in))-1])
	}
	v, err := ParseBareHex("0123456789012345")
	require.NoError(t, err)
	assert.Equal(t, uint64(0x0123456789012345), v, "bare hex, when asked for, reads digits as hex")
	for _, in := range []string{"", "0x", "12345678901234567", "xyz"} {
		_, err = ParseBareHex(in)
		assert.ErrorIs(t, err, ErrSyntax, in)
	}
	_, err = Parse(strings.Repeat("9", 10000))
	require.ErrorIs(t, err, ErrSyntax)
	assert.Less(t, len(err.Error()), 200, "a long input is not echoed whole")
	assert.Contains(t, err.Error(), "(10000 bytes)")
}

// text returns n words of seeded pseudo-English.
func text(seed uint64, n int) string {
	r := rand.New(rand.NewPCG(seed, 1))
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		w := make([]byte, 2+r.IntN(8))
		for j := range w {
			w[j] = byte('a' + r.IntN(26))
		}
		b.Write(w)
	}
	return b.String()
}

func TestEmptyInputIsZero(t *testing.T) {
	f := Default()
	assert.Zero(t, f.Text(""))
	assert.Zero(t, f.Text("  ,,, \n"))
	got, err := f.Reader(strings.NewReader(""))
	require.NoError(t, err)
	assert.Zero(t, got)
	got, err = f.HTML(strings.NewReader("<html><script>x y z</script></html>"))
	require.NoError(t, err)
	assert.Zero(t, got)
	assert.Zero(t, Sum(nil))
}

func TestReaderMatchesBytes(t *testing.T) {
	f := Default()
	for _, n := range []int{1, 10, 30000, 200000} { // 200k words ~ 1.2 MB: many chunks
		doc := text(uint64(n), n)
		want := f.Text(doc)
		got, err := f.Reader(strings.NewReader(doc))
		require.NoError(t, err)
		assert.Equal(t, want, got, "n=%d", n)
		got, err = f.Reader(iotest.HalfReader(strings.NewReader(doc)))
		require.NoError(t, err)
		assert.Equal(t, want, got, "n=%d half reads", n)
	}
	// CJK text has no ASCII separators; chunks are cut at its own punctuation.
	r := rand.New(rand.NewPCG(5, 5))
	var cjk strings.Builder
	for cjk.Len() < 500<<10 {
		cjk.WriteRune(rune(0x4e00 + r.IntN(3000)))
		if r.IntN(12) == 0 {
			cjk.WriteString("，")
		}
	}
	got, err := f.Reader(strings.NewReader(cjk.String()))
	require.NoError(t, err)
	assert.Equal(t, f.Text(cjk.String()), got)
	// With no separator at all the stream is cut between characters (losing
	// one bigram per 64 KiB), and still fingerprints.
	solid := strings.Repeat("近似重复检测算法是网页去重的关键", 20000)
	got, err = f.Reader(strings.NewReader(solid))
	require.NoError(t, err)
	assert.NotZero(t, got)
}

// endless is a reader of an unbounded stream of pseudo-words.
type endless struct{ r *rand.Rand }

func (e endless) Read(p []byte) (int, error) {
	for i := range p {
		if e.r.IntN(7) == 0 {
			p[i] = ' '
		} else {
			p[i] = byte('a' + e.r.IntN(26))
		}
	}
	return len(p), nil
}

func TestHugeReaderConstantMemory(t *testing.T) {
	f := Default()
	const size = 16 << 20
	allocs := testing.AllocsPerRun(1, func() {
		_, err := f.Reader(io.LimitReader(endless{rand.New(rand.NewPCG(1, 2))}, size))
		require.NoError(t, err)
	})
	assert.Less(t, allocs, 20.0, "a 16 MiB stream must not allocate per token")
}

type errReader struct{}

func (errReader) Read([]byte) (int, error) { return 0, errors.New("disk on fire") }

func TestReaderError(t *testing.T) {
	_, err := Default().Reader(errReader{})
	assert.ErrorContains(t, err, "disk on fire")
	_, err = Default().HTML(errReader{})
	assert.ErrorContains(t, err, "disk on fire")
}

func TestNearDuplicatesAreClose(t *testing.T) {
	f := Default()
	far := 0
	for seed := range uint64(20) {
		doc := strings.Fields(text(seed, 2000))
		edited := append([]string{"updated", "today"}, doc...)
		edited[1000] = "changed"
		d := Distance(f.Text(strings.Join(doc, " ")), f.Text(strings.Join(edited, " ")))
		assert.LessOrEqual(t, d, 6, "seed %d", seed)
		other := f.Text(text(seed+1000, 2000))
		if Distance(f.Text(strings.Join(doc, " ")), other) > 10 {
			far++
		}
	}
	assert.GreaterOrEqual(t, far, 19, "unrelated documents are far apart")
}

func TestHTML(t *testing.T) {
	f := Default()
	plain := "Title here. The quick brown fox jumps over the lazy dog & friends"
	page := `<!DOCTYPE html><html><head><title>Title here.</title>
		<style>body { color: red }</style><script>var quick = "not visible";</script></head>
		<body><!-- a comment --><p>The <b>qu</b>ick brown fox</p><div>jumps over the lazy dog &amp; friends</div>
		<noscript>enable javascript</noscript><template>hidden</template></body></html>`
	got, err := f.HTML(strings.NewReader(page))
	require.NoError(t, err)
	assert.Equal(t, f.Text(plain), got)
	// Malformed HTML is read as a browser would, without error.
	got, err = f.HTML(strings.NewReader("<p>unclosed <b>tags <script>x"))
	require.NoError(t, err)
	assert.Equal(t, f.Text("unclosed tags"), got)
}

func TestOptions(t *testing.T) {
	// Repeated phrases (for the weightings), capitals and punctuation (for the
	// tokenizers) and stop words, so that every option has something to change.
	doc := strings.Repeat("The Cat sat, on the MAT. ", 30) + text(3, 100)
	base := Default()
	variants := map[string]Options{
		"shingle 1":    {Shingle: 1},
		"shingle 5":    {Shingle: 5},
		"logtf":        {Weighting: LogTF},
		"binary":       {Weighting: Binary},
		"stop words":   {StopWords: EnglishStopWords()},
		"fnv1":         {Hash: FNV1},
		"ties to one":  {TiesToOne: true, Shingle: 1, Weighting: Binary},
		"custom token": {Tokenizer: whitespace{}},
	}
	for name, o := range variants {
		t.Run(name, func(t *testing.T) {
			f, err := New(o)
			require.NoError(t, err)
			a, b := f.Text(doc), f.Text(doc)
			assert.Equal(t, a, b, "deterministic")
			if name != "ties to one" {
				assert.NotEqual(t, base.String(doc), a, "the option changes the fingerprint")
			}
		})
	}
	// Stop words are normalised like tokens and removed before shingling.
	f, err := New(Options{StopWords: []string{"THE", "and"}})
	require.NoError(t, err)
	assert.Equal(t, f.Text("cat the sat and mat"), f.Text("cat sat mat"))
	// Binary ignores repeats; TF does not.
	bin, _ := New(Options{Weighting: Binary, Shingle: 1})
	assert.Equal(t, bin.String("a b c"), bin.String("a a a b c c"))
	tf, _ := New(Options{Shingle: 1})
	assert.NotEqual(t, tf.String("x y z w"), tf.String("x x x x x x x y z w"))
	// Fewer tokens than a shingle: one feature of all of them.
	f5, _ := New(Options{Shingle: 5})
	assert.Equal(t, f5.String("alpha beta"), f5.String("ALPHA, beta!"))
	assert.NotZero(t, f5.String("alpha beta"))
	assert.Equal(t, f5.Options().Shingle, 5)
}

func TestTiesToOne(t *testing.T) {
	// One feature and its complement tie on every counter.
	feats := []Feature{{Hash: 0xf0f0, Weight: 1}, {Hash: ^uint64(0xf0f0), Weight: 1}}
	assert.Zero(t, Sum(feats))
	var v Vector
	for _, ft := range feats {
		v.Add(ft.Hash, ft.Weight)
	}
	assert.Equal(t, ^uint64(0), v.Sum(true))
}

func TestInvalidOptions(t *testing.T) {
	for _, o := range []Options{{Shingle: -1}, {Shingle: MaxShingle + 1}, {Weighting: 99}} {
		_, err := New(o)
		assert.ErrorIs(t, err, ErrOptions)
	}
}

type whitespace struct{}

func (whitespace) Tokenize(b []byte, emit func([]byte)) {
	for _, f := range bytes.Fields(b) {
		emit(f)
	}
}

func TestSumAndVector(t *testing.T) {
	assert.Equal(t, uint64(0b101), Sum([]Feature{{0b101, 2}, {0b011, 1}}))
	assert.Equal(t, uint64(0b011), Sum([]Feature{{0b101, 1}, {0b011, 2}}))
	assert.Zero(t, Sum([]Feature{{^uint64(0), 0}}), "zero weight ignored")
	// The unit fast path agrees with weighted addition across lane spills.
	r := rand.New(rand.NewPCG(7, 7))
	var unit, weighted Vector
	const mask = 0x00ff00ff00ff00ff
	for range 10000 {
		h := (r.Uint64() & r.Uint64()) ^ mask // bits in mask lean to 1, the others to 0
		unit.AddUnit(h)
		weighted.Add(h, 1)
	}
	assert.Equal(t, uint64(mask), unit.Sum(false))
	assert.Equal(t, uint64(mask), weighted.Sum(false))
}

// javaSimHash is seed 001's Java algorithm, written as that code reads:
// bit i counted from the most significant end, counters tested ">= 0".
func javaSimHash(words []string) uint64 {
	var v [64]int
	for _, w := range words {
		h := FNV1UTF16([]byte(w))
		for i := range 64 {
			if h&(1<<(63-i)) != 0 {
				v[i]++
			} else {
				v[i]--
			}
		}
	}
	var fp uint64
	for i := range 64 {
		if v[i] >= 0 {
			fp |= 1 << (63 - i)
		}
	}
	return fp
}

func TestReproducesSeed001Java(t *testing.T) {
	f, err := New(Options{Tokenizer: whitespace{}, Shingle: 1, Hash: FNV1UTF16, TiesToOne: true})
	require.NoError(t, err)
	for _, doc := range []string{"网页 内容 相似度 算法 网页", "a b c d e f g", "x", "😀 emoji 𝄞 clef"} {
		assert.Equal(t, javaSimHash(strings.Fields(doc)), f.Text(doc), doc)
	}
	// FNV1UTF16 hashes UTF-16 code units, surrogate pairs included.
	u := utf16.Encode([]rune("a😀"))
	h := uint64(fnvOffset64)
	for _, c := range u {
		h = (h * fnvPrime64) ^ uint64(c)
	}
	assert.Equal(t, h, FNV1UTF16([]byte("a😀")))
	assert.Equal(t, uint64(0xaf63bd4c8601b7be), FNV1([]byte("a")), "FNV-1 64 test vector")
}

func TestIDF(t *testing.T) {
	base, err := New(Options{Shingle: 1})
	require.NoError(t, err)
	idf := NewIDF()
	docs := []string{"common rare1", "common rare2", "common"}
	for i := range 10 {
		docs = append(docs, fmt.Sprintf("common filler%d", i))
	}
	for _, d := range docs {
		require.NoError(t, idf.AddDocument(base, strings.NewReader(d)))
	}
	assert.Equal(t, uint64(13), idf.Documents())
	h := func(s string) uint64 { return XXHash([]byte(s)) }
	assert.InDelta(t, 1.0, idf.Weight(h("common")), 1e-9)
	assert.Greater(t, idf.Weight(h("rare1")), idf.Weight(h("common")))
	assert.Greater(t, idf.Weight(h("unseen")), idf.Weight(h("rare1")))

	var buf bytes.Buffer
	_, err = idf.WriteTo(&buf)
	require.NoError(t, err)
	back, err := ReadIDF(bytes.NewReader(buf.Bytes()))
	require.NoError(t, err)
	assert.Equal(t, idf.Weight(h("rare1")), back.Weight(h("rare1")))

	f, err := New(Options{Shingle: 1, IDF: back})
	require.NoError(t, err)
	// By TF "common" (twice) outweighs "rare1"; by TF-IDF rare1 (idf 2.9) wins.
	assert.Equal(t, XXHash([]byte("common")), base.String("common common rare1"), "sanity: TF picks common's bits")
	assert.Equal(t, XXHash([]byte("rare1")), f.Text("common common rare1"))

	for i := range buf.Len() {
		bad := bytes.Clone(buf.Bytes())
		bad[i] ^= 0x40
		_, err := ReadIDF(bytes.NewReader(bad))
		assert.ErrorIs(t, err, ErrCorruptIDF, "flipped byte %d", i)
	}
	_, err = ReadIDF(bytes.NewReader(buf.Bytes()[:buf.Len()-1]))
	assert.ErrorIs(t, err, ErrCorruptIDF)
}

func TestConcurrentUse(t *testing.T) {
	f := Default()
	docs := []string{text(1, 500), text(2, 500), text(3, 500)}
	want := make([]uint64, len(docs))
	for i, d := range docs {
		want[i] = f.Text(d)
	}
	done := make(chan bool)
	for g := range 4 {
		go func() {
			ok := true
			for i := range 200 {
				j := (i + g) % len(docs)
				ok = ok && f.Text(docs[j]) == want[j]
			}
			done <- ok
		}()
	}
	for range 4 {
		assert.True(t, <-done)
	}
}
