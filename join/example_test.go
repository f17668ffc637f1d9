package join_test

import (
	"context"
	"fmt"

	"github.com/simhashdb/simhashdb/join"
)

// Every pair of fingerprints within 3 bits of each other, then the groups
// they join.
func Example() {
	fps := []uint64{
		0x0123456789abcdef,
		0x0123456789abcdee, // 1 bit from the first
		0x0123456789abcd0f, // 3 bits from the first, 4 from the second
		0xfedcba9876543210,
		0xfedcba9876543210, // a repeat
		0x0f0f0f0f0f0f0f0f,
	}
	distinct, repeated := join.Distinct(fps)
	d, err := join.DesignFor(3, len(distinct))
	if err != nil {
		panic(err)
	}
	f, err := join.New(d, 3)
	if err != nil {
		panic(err)
	}
	pairs, err := f.Pairs(context.Background(), distinct, 1)
	if err != nil {
		panic(err)
	}
	for _, p := range pairs {
		fmt.Printf("%016x %016x distance %d\n", p.A, p.B, p.Distance)
	}
	fmt.Println("repeated:", len(repeated))
	for _, c := range join.Components(pairs) {
		fmt.Printf("group of %d: %016x...\n", len(c), c[0])
	}
	// Unordered output:
	// 0123456789abcd0f 0123456789abcdef distance 3
	// 0123456789abcdee 0123456789abcdef distance 1
	// repeated: 1
	// group of 3: 0123456789abcd0f...
}
