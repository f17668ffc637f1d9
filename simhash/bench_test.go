package simhash

import (
	"bytes"
	"io"
	"math/rand/v2"
	"strings"
	"testing"
)

// englishLike returns about n bytes of text with English's word lengths,
// capitals and punctuation.
func englishLike(n int) []byte {
	words := strings.Fields(`the of and to in a is that for it as was with be by on not he I this are
		or his from at which but have an they you were her she there would their we him been has
		when who will more no if out so said what up its about into than them can only other new
		some could time these two may then do first any my now such like our over man me even most
		made after also did many before must through back years where much your way well down
		should because each just those people Mr how too little state good very make world still
		own see men work long get here between both life being under never day same another know
		while last might us great old year off come since against go came right used take three
		Software License Copyright permission notice distribute modify warranty merchantability`)
	r := rand.New(rand.NewPCG(1, 1))
	var b bytes.Buffer
	for b.Len() < n {
		b.WriteString(words[r.IntN(len(words))])
		switch r.IntN(12) {
		case 0:
			b.WriteString(". ")
		case 1:
			b.WriteString(", ")
		default:
			b.WriteByte(' ')
		}
	}
	return b.Bytes()
}

func BenchmarkFingerprint(b *testing.B) {
	doc := englishLike(1 << 20)
	for _, bc := range []struct {
		name string
		opts Options
	}{
		{"default", Options{}},
		{"shingle1", Options{Shingle: 1}},
		{"shingle5", Options{Shingle: 5}},
		{"logtf", Options{Weighting: LogTF}},
		{"stopwords", Options{StopWords: EnglishStopWords()}},
		{"fnv1", Options{Hash: FNV1}},
		{"v2", Options{Pipeline: PipelineV2}},
		{"v3", Options{Pipeline: PipelineV3}},
	} {
		f, err := New(bc.opts)
		if err != nil {
			b.Fatal(err)
		}
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(int64(len(doc)))
			for b.Loop() {
				f.Bytes(doc)
			}
		})
	}
	f := Default()
	b.Run("reader", func(b *testing.B) {
		b.SetBytes(int64(len(doc)))
		for b.Loop() {
			if _, err := f.Reader(bytes.NewReader(doc)); err != nil {
				b.Fatal(err)
			}
		}
	})
	cjk := bytes.Repeat([]byte("近似重复检测是网络爬虫的关键步骤，"), 1<<15)
	b.Run("cjk", func(b *testing.B) {
		b.SetBytes(int64(len(cjk)))
		for b.Loop() {
			f.Bytes(cjk)
		}
	})
	var page bytes.Buffer
	for page.Len() < 1<<20 {
		page.WriteString("<div class=\"c\"><p>")
		page.Write(englishLike(400))
		page.WriteString("</p><script>var x = 1;</script></div>\n")
	}
	b.Run("html", func(b *testing.B) {
		b.SetBytes(int64(page.Len()))
		for b.Loop() {
			if _, err := f.HTML(bytes.NewReader(page.Bytes())); err != nil {
				b.Fatal(err)
			}
		}
	})
	// The pipelines as the command reads files: numbers among the words,
	// pages and manual pages sniffed and read, navigation included.
	numbered := bytes.ReplaceAll(doc, []byte("time "), []byte("1997 "))
	navPage := append([]byte("<!DOCTYPE html><nav><a href=/>Home</a> Next</nav>\n"), page.Bytes()...)
	var man bytes.Buffer
	man.WriteString(".TH BENCH 1 2026\n.SH NAME\nbench \\- words\n")
	for man.Len() < 1<<20 {
		man.WriteString(".TP\n\\fB\\-\\-option\\fR \\fIfile\\fP\n")
		man.Write(englishLike(400))
		man.WriteString("\n.PP\n")
	}
	for _, p := range []Pipeline{PipelineV2, PipelineV3} {
		f, err := New(Options{Pipeline: p})
		if err != nil {
			b.Fatal(err)
		}
		b.Run(p.String()+"-numbers", func(b *testing.B) {
			b.SetBytes(int64(len(numbered)))
			for b.Loop() {
				f.Bytes(numbered)
			}
		})
		for _, in := range []struct {
			name string
			doc  []byte
		}{{"text", numbered}, {"html", navPage}, {"man", man.Bytes()}} {
			b.Run(p.String()+"-document-"+in.name, func(b *testing.B) {
				b.SetBytes(int64(len(in.doc)))
				for b.Loop() {
					if _, err := f.Document(bytes.NewReader(in.doc), ReadAuto); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkDistance(b *testing.B) {
	x := uint64(0x0123456789abcdef)
	s := 0
	for b.Loop() {
		s += Distance(x, x*3)
		x++
	}
	_ = io.Discard
	_ = s
}
