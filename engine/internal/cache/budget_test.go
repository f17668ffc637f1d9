package cache

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestPebbleShare: Pebble's share is an eighth of the budget (8 MiB at
// least) while its index blocks fit, grows with them, and stops at three
// quarters of the budget.
func TestPebbleShare(t *testing.T) {
	for _, tc := range []struct {
		cache, index, share, engine int64
	}{
		{256 << 20, 2 << 20, 32 << 20, 224 << 20},
		{256 << 20, 40 << 20, 80 << 20, 176 << 20},
		{256 << 20, 400 << 20, 192 << 20, 64 << 20},
		{32 << 20, 1 << 20, 8 << 20, 24 << 20},
		{32 << 20, 10 << 20, 20 << 20, 12 << 20},
		{32 << 20, 40 << 20, 24 << 20, 8 << 20},
	} {
		b := Budget{Total: tc.cache, MinPebble: MinPebbleCache, MaxShare: MaxPebbleShare}
		share := b.PebbleFor(tc.index)
		require.Equal(t, tc.share, share, "%d MiB of index blocks in a cache of %d MiB", tc.index>>20, tc.cache>>20)
		require.Equal(t, tc.engine, b.Engine(share))
		require.Equal(t, b.Total, b.Engine(share)+share, "the two caches take the budget")
	}
}
