package engine

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStatsCountsWhatReadersFind: Stats' Documents is the number of
// documents Get finds, through inserts, replacements and deletes in the
// memtable, a flush, and more writes on top of flushed ones.
func TestStatsCountsWhatReadersFind(t *testing.T) {
	db := openT(t, t.TempDir(), Options{SizeHint: 1 << 12, MemtableSize: 1 << 30, Sync: SyncNone})
	defer db.Close()
	r := rand.New(rand.NewPCG(9, 9))
	model := map[uint64]bool{}
	check := func(when string) {
		st, err := db.Stats(ctx)
		require.NoError(t, err)
		require.Equal(t, int64(len(model)), st.Documents, when)
	}
	write := func(n int) {
		for range n {
			id := uint64(r.IntN(5000))
			if r.IntN(4) == 0 {
				require.NoError(t, db.Delete(ctx, id))
				delete(model, id)
			} else {
				require.NoError(t, db.Insert(ctx, Doc{ID: id, Fingerprint: r.Uint64()}))
				model[id] = true
			}
		}
	}
	check("empty")
	write(3224)
	check("all in the memtable")
	check("again, from the kept count")
	require.NoError(t, db.Flush(ctx))
	check("flushed")
	write(2000)
	check("writes over flushed documents")
	require.NoError(t, db.Flush(ctx))
	check("flushed again")
}
