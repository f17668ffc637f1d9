package huffman_test

import (
	"fmt"

	"github.com/simhashdb/simhashdb/huffman"
)

// A code built from a histogram, symbols written with it and read back.
// The codec's symbols are the leading zero bits of the gaps between sorted
// fingerprints (codec.H), which crowd around a few values set by how many
// fingerprints a table holds; every symbol gets a code word, also those
// never seen.
func Example() {
	var freq [huffman.Symbols]uint64
	freq[20], freq[21], freq[22], freq[23] = 500, 250, 125, 125
	code := huffman.Build(&freq)
	fmt.Println("lengths of 20..23:", code.Len(20), code.Len(21), code.Len(22), code.Len(23))
	fmt.Println("bits for the histogram:", code.Cost(&freq))

	msg := []int{20, 21, 20, 23, 22, 20}
	w := huffman.NewWriter(nil)
	for _, s := range msg {
		code.Encode(w, s)
	}
	bits := w.Len()
	r := huffman.NewReader(w.Bytes())
	var got []int
	for range msg {
		s, err := code.Decode(r)
		if err != nil {
			panic(err)
		}
		got = append(got, s)
	}
	fmt.Println(bits, "bits:", got, r.Err())
	// Output:
	// lengths of 20..23: 1 2 4 3
	// bits for the histogram: 1875
	// 12 bits: [20 21 20 23 22 20] <nil>
}
