package store

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// BenchmarkGetMany measures the processor's part of a cold query's reads
// through the block map: GetMany of 8 keys of about a kilobyte, a table
// block's size, in runs of two neighbours (a probe's range often spans
// two table blocks), from a read-only store whose file, just written,
// the page cache holds: the ring's reads cost a copy rather than the disk.
func BenchmarkGetMany(b *testing.B) {
	const n = 1 << 16
	r := rand.New(rand.NewPCG(9, 9))
	s := mappedStore(b, r, []randomFile{{"\x04", n, 1000}})
	snap := s.NewSnapshot()
	defer snap.Close()
	keys := make([][]byte, 8)
	got := 0
	read := func(int, []byte) error { got++; return nil }
	for b.Loop() {
		for i := 0; i < len(keys); i += 2 {
			k := r.IntN(n - 1)
			keys[i], keys[i+1] = fmt.Appendf(keys[i][:0], "\x04%08d", k), fmt.Appendf(keys[i+1][:0], "\x04%08d", k+1)
		}
		if _, err := snap.GetMany(keys, read); err != nil {
			b.Fatal(err)
		}
	}
	require.Equal(b, b.N*len(keys), got, "every key read by the map")
}
