package engine

import (
	"iter"
	"testing"

	"github.com/stretchr/testify/require"
)

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
	t.Parallel()
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
