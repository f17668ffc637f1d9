package sketch_test

import (
	"fmt"
	"strings"

	"github.com/cespare/xxhash/v2"
	"github.com/simhashdb/simhashdb/sketch"
)

// The sketches of two texts estimate the share of their five-word shingles
// that they have in common (their Jaccard similarity): one word changed in
// a text of 99 words changes 5 of its 95 shingles, so 90 of the 100 shingles of both are
// common to both. The estimate's standard deviation is about 0.03 there.
func Example() {
	of := func(text string) sketch.Sketch {
		t := sketch.NewText()
		for _, w := range strings.Fields(text) {
			t.Token(xxhash.Sum64String(w))
		}
		return t.Sketch()
	}
	words := make([]string, 99)
	for i := range words {
		words[i] = fmt.Sprint("word", i)
	}
	a := of(strings.Join(words, " "))
	words[50] = "changed"
	b := of(strings.Join(words, " "))
	c := of("an entirely different text about the compression of fingerprints in blocks")
	fmt.Printf("a, b: %.2f (exactly %.2f)\n", sketch.Similarity(a, b), 90.0/100)
	fmt.Printf("a, c: %.2f\n", sketch.Similarity(a, c))
	fmt.Println(len(a), "bytes a sketch")
	// Output:
	// a, b: 0.94 (exactly 0.90)
	// a, c: 0.04
	// 32 bytes a sketch
}
