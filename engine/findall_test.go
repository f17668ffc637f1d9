package engine

import (
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
