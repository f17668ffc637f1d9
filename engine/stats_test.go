package engine

import (
	"testing"

	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/stretchr/testify/require"
)

// TestStatsPebbleIndex: Stats counts the index and filter blocks of
// Pebble's files, more of them for a larger index, and Pebble's share of
// the cache they are read through.
func TestStatsPebbleIndex(t *testing.T) {
	var index []int64
	for _, n := range []int{1 << 12, 1 << 16} {
		o := Options{Expected: int64(n), CacheSize: 256 << 20, Sync: SyncNone}
		db := openT(t, t.TempDir(), o)
		docs := make([]Doc, n)
		for i, fp := range fingerprints.Uniform(n, 4) {
			docs[i] = Doc{ID: uint64(i), Fingerprint: fp, Name: "x"}
		}
		require.NoError(t, db.Load(ctx, docs))
		st, err := db.Stats(ctx)
		require.NoError(t, err)
		require.NoError(t, db.Close())
		require.Positive(t, st.PebbleIndexBytes)
		require.Less(t, st.PebbleIndexBytes, st.PebbleBytes/10, "a small part of the files")
		require.Equal(t, int64(256<<20/PebbleCacheShare), st.PebbleCacheSize)
		index = append(index, st.PebbleIndexBytes)
	}
	require.Greater(t, index[1], 4*index[0], "16 times the documents")
}
