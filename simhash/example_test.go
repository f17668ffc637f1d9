package simhash_test

import (
	"errors"
	"fmt"
	"strings"

	"github.com/simhashdb/simhashdb/simhash"
)

func Example() {
	f := simhash.Default()
	page := `A web crawler fetches billions of pages, and many of them are near-duplicates of
		pages it has already seen: the same article with a different advertisement, a new
		timestamp, or a visitor counter. Storing and indexing every copy wastes disk, and
		showing them all in search results annoys users. SimHash maps each document to a
		64-bit fingerprint such that similar documents get fingerprints that differ in few
		bit positions, so the crawler can ask whether any stored fingerprint lies within a
		small Hamming distance of a new one before it keeps the page.`
	a := f.Text(page)
	b := f.Text(strings.Replace(page, "billions", "millions", 1) + " Updated today.")
	// A short page with one word changed and two added moves a few bits; an
	// unrelated text is about 32 bits (half of 64) away.
	c := f.Text("Call me Ishmael. Some years ago, never mind how long precisely, I went to sea.")
	fmt.Println("edited copy:", simhash.Distance(a, b), "bits apart")
	fmt.Println("unrelated text:", simhash.Distance(a, c), "bits apart")
	// Output:
	// edited copy: 6 bits apart
	// unrelated text: 30 bits apart
}

func ExampleFingerprinter_HTML() {
	f := simhash.Default()
	page := `<html><head><script>track()</script></head><body><p>Hello, <b>world</b>!</p></body></html>`
	fp, err := f.HTML(strings.NewReader(page))
	if err != nil {
		panic(err)
	}
	fmt.Println(fp == f.Text("Hello, world!"))
	// Output: true
}

func ExampleNew() {
	f, err := simhash.New(simhash.Options{Shingle: 3, StopWords: simhash.EnglishStopWords()})
	if err != nil {
		panic(err)
	}
	fmt.Println(f.Text("") == 0)
	_, err = simhash.New(simhash.Options{Shingle: -1})
	fmt.Println(err)
	// Output:
	// true
	// simhash: invalid options: Shingle -1 is outside 1..64
}

func ExampleParse() {
	fp, _ := simhash.Parse("0xdeadbeef")
	fmt.Println(simhash.Format(fp))
	_, err := simhash.Parse("deadbeef")
	fmt.Println(err)
	// Output:
	// 0x00000000deadbeef
	// simhash: invalid fingerprint "deadbeef": looks hexadecimal; write it as 0xdeadbeef
}

func ExampleSum() {
	fp := simhash.Sum([]simhash.Feature{
		{Hash: 0b0110, Weight: 2},
		{Hash: 0b0011, Weight: 1},
	})
	fmt.Printf("%04b\n", fp)
	// Output: 0110
}

// Document reads a file as its content says: here an HTML page, read as its
// visible text, and a binary, refused.
func ExampleFingerprinter_Document() {
	f, err := simhash.New(simhash.Options{Pipeline: simhash.LatestPipeline})
	if err != nil {
		panic(err)
	}
	page := "<!DOCTYPE html><html><body><p>Release 5.10 notes</p></body></html>"
	fp, err := f.Document(strings.NewReader(page), simhash.ReadAuto)
	fmt.Println(fp == f.Text("Release 5.10 notes"), err)
	_, err = f.Document(strings.NewReader("\x7fELF\x02\x01\x01\x00\x00"), simhash.ReadAuto)
	fmt.Println(errors.Is(err, simhash.ErrBinary))
	// Output:
	// true <nil>
	// true
}

// A manual page's roff source is read as the text man shows, and an SVG
// drawing without labels has no words to fingerprint.
func ExampleFingerprinter_Document_manualPage() {
	f, err := simhash.New(simhash.Options{Pipeline: simhash.LatestPipeline})
	if err != nil {
		panic(err)
	}
	man := ".TH CAT 1\n.SH NAME\ncat \\- concatenate files\n.SH SYNOPSIS\n.B cat\n[\\fIFILE\\fR]...\n"
	fp, err := f.Document(strings.NewReader(man), simhash.ReadAuto)
	fmt.Println(fp == f.Text("CAT 1 NAME cat - concatenate files SYNOPSIS cat [FILE]..."), err)
	_, err = f.Document(strings.NewReader(`<svg xmlns="http://www.w3.org/2000/svg"><path d="M0 0L9 9"/></svg>`), simhash.ReadAuto)
	fmt.Println(errors.Is(err, simhash.ErrEmpty))
	// Output:
	// true <nil>
	// true
}

func ExampleParsePipeline() {
	p, err := simhash.ParsePipeline("v2") // as an index made before v3 stores it
	fmt.Println(p == simhash.PipelineV2, err)
	_, err = simhash.ParsePipeline("v7")
	fmt.Println(err)
	// Output:
	// true <nil>
	// simhash: invalid options: pipeline "v7": want v1, v2 or v3
}
