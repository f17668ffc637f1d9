package engine

import (
	"iter"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestClustersChain(t *testing.T) {
	d := func(id uint64) Doc { return Doc{ID: id, Fingerprint: id * 3} }
	pairs := []Pair{
		{d(5), d(9), 1}, {d(1), d(5), 2}, // a chain: 1-5-9 (1 and 9 need not be close)
		{d(7), d(8), 0}, // a separate pair
		{d(9), d(1), 3}, // a cycle adds nothing
	}
	require.Equal(t, [][]Doc{{d(1), d(5), d(9)}, {d(7), d(8)}}, clusters(pairs))
	require.Empty(t, clusters(nil))
}

// lastErr drains a stream and returns its last error.
func lastErr[T any](seq iter.Seq2[T, error]) error {
	var last error
	for _, err := range seq {
		if err != nil {
			last = err
		}
	}
	return last
}

func TestBatchCallsRejectDistance(t *testing.T) {
	db := openT(t, t.TempDir(), testOptions())
	defer db.Close()
	for _, k := range []int{-1, 4} {
		require.ErrorIs(t, lastErr(db.QueryBatch(ctx, []uint64{1}, k)), ErrDistance, "QueryBatch k=%d", k)
		require.ErrorIs(t, lastErr(db.FindAll(ctx, k)), ErrDistance, "FindAll k=%d", k)
		require.ErrorIs(t, lastErr(db.Clusters(ctx, k)), ErrDistance, "Clusters k=%d", k)
	}
	n := 0
	for r, err := range db.QueryBatch(ctx, []uint64{1, 2}, 3) {
		require.NoError(t, err)
		require.Empty(t, r.Matches, "an empty index")
		n++
	}
	require.Equal(t, 2, n)
}
