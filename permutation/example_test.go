package permutation_test

import (
	"fmt"
	"math"
	"os"

	"github.com/simhashdb/simhashdb/permutation"
)

// The paper's Example 3.1: the fewest tables for k = 3 whose probes fix at
// least 25 bits, for 2^34 stored fingerprints.
func ExampleOptimize() {
	d, err := permutation.Optimize(3, 25)
	if err != nil {
		panic(err)
	}
	d.Describe(os.Stdout, 34)
	// Output:
	// design: 10 tables, k = 3, corpus 2^34
	//   table  0  p=26  candidates/probe 256        [63:51 50:38 | 37:0] p=26
	//   table  1  p=26  candidates/probe 256        [63:51 37:25 | 50:38 24:0] p=26
	//   table  2  p=26  candidates/probe 256        [63:51 24:12 | 50:25 11:0] p=26
	//   table  3  p=25  candidates/probe 512        [63:51 11:0 | 50:12] p=25
	//   table  4  p=26  candidates/probe 256        [50:38 37:25 | 63:51 24:0] p=26
	//   table  5  p=26  candidates/probe 256        [50:38 24:12 | 63:51 37:25 11:0] p=26
	//   table  6  p=25  candidates/probe 512        [50:38 11:0 | 63:51 37:12] p=25
	//   table  7  p=26  candidates/probe 256        [37:25 24:12 | 63:38 11:0] p=26
	//   table  8  p=25  candidates/probe 512        [37:25 11:0 | 63:38 24:12] p=25
	//   table  9  p=25  candidates/probe 512        [24:12 11:0 | 63:25] p=25
	// candidates per query: 3584; space factor: 10x one table
}

// An index of 30M fingerprints that lives on the disk: ForDisk keeps 4
// tables, whose probes scan longer ranges but read fewer pages than the
// 10 of ForIndex.
func ExampleForDisk() {
	const n = 30_000_000
	logN := math.Log2(n)
	for _, f := range []func(k, n int) (*permutation.Design, error){permutation.ForIndex, permutation.ForDisk} {
		d, err := f(3, n)
		if err != nil {
			panic(err)
		}
		fmt.Printf("%d tables: %.1f pages and %.0f candidates a query\n", len(d.Tables), d.PagesPerQuery(logN), d.CandidatesPerQuery(logN))
	}
	// Output:
	// 10 tables: 10.0 pages and 6 candidates a query
	// 4 tables: 6.3 pages and 1831 candidates a query
}

func ExampleTable_Range() {
	d, _ := permutation.Paper(4)
	t := &d.Tables[1]
	q := t.Permute(0x0123_4567_89ab_cdef)
	lo, hi := t.Range(q)
	fmt.Printf("scan %016x..%016x\n", lo, hi)
	// Output: scan 4567000000000000..4567ffffffffffff
}
