package main

import (
	"fmt"
	"math"

	"github.com/simhashdb/simhashdb/engine/join"
	"github.com/simhashdb/simhashdb/permutation"
)

func main() {
	for _, n := range []float64{1e6, 8e9} {
		d, err := join.DesignFor(3, int(n))
		if err != nil {
			panic(err)
		}
		cmp := 0.0
		for _, tb := range d.Tables {
			run := n / math.Exp2(float64(tb.Prefix))
			cmp += n * run / 2
		}
		fmt.Printf("find-all n=%.0g: %d tables, prefixes %d.. ; comparisons %.3g (%.2f per fp)\n", n, len(d.Tables), d.MinPrefix(), cmp, cmp/n)
	}
	// batch: 1M queries, 8B stored.
	d, _ := join.DesignFor(3, 1<<20)
	q, s := 1e6, 8e9
	cmp := 0.0
	for _, tb := range d.Tables {
		cmp += s * q / math.Exp2(float64(tb.Prefix))
	}
	fmt.Printf("batch 1M x 8B: %d tables, prefixes %d..; comparisons %.3g\n", len(d.Tables), d.MinPrefix(), cmp)
	ix, _ := permutation.ForIndex(3, 8e9)
	fmt.Printf("build 8B: %d tables prefixes %d..\n", len(ix.Tables), ix.MinPrefix())
}
