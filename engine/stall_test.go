package engine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/stretchr/testify/require"
)

// stallDocs returns n documents from id on, each with a name of 300 bytes.
func stallDocs(r *rand.Rand, id, n int) []Doc {
	docs := make([]Doc, n)
	for i := range docs {
		docs[i] = Doc{ID: uint64(id + i), Fingerprint: r.Uint64(), Name: fmt.Sprintf("%08d", id+i) + strings.Repeat("n", 292)}
	}
	return docs
}

// TestStallBoundsMemtables holds a flush while writers go on: they wait
// once the memtables, with the commits let in, would pass MemtablesMax
// (two budgets), and the memtables are within it then; once the flush
// goes on, every write is stored.
func TestStallBoundsMemtables(t *testing.T) {
	o := testOptions()
	o.MemtableSize = 256 << 10
	flushing, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	o.knobs.flushWrites = func([]store.Writes, []*pebble.Batch) {
		once.Do(func() { close(flushing); <-release })
	}
	stalled := make(chan struct{}, 1)
	o.knobs.stalled = func() {
		select {
		case stalled <- struct{}{}:
		default:
		}
	}
	db := openT(t, t.TempDir(), o)
	defer db.Close()
	var released sync.Once
	unblock := func() { released.Do(func() { close(release) }) }
	defer unblock() // before Close, which waits for the flush
	r := rand.New(rand.NewPCG(3, 3))
	const writers, batches, batch = 3, 40, 100
	all := make([][]Doc, writers)
	for w := range all {
		all[w] = stallDocs(r, w*batches*batch, batches*batch)
	}
	errs := make(chan error, writers)
	for w := range writers {
		go func() {
			for b := range batches {
				if err := db.InsertBatch(ctx, all[w][b*batch:(b+1)*batch]); err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	<-flushing
	<-stalled
	db.mu.RLock()
	held, most, budget := db.unflushed(), db.memtablesMax(), db.memtableBudget()
	db.mu.RUnlock()
	require.Equal(t, 2*budget, most)
	require.Equal(t, most, db.MemoryBudget().Memtables)
	require.LessOrEqual(t, held, most, "the memtables while writers wait for a flush")
	require.Greater(t, held, budget, "writers stalled before the live memtable filled")
	unblock()
	for range writers {
		require.NoError(t, <-errs)
	}
	for w := range all {
		for _, d := range all[w] {
			got, err := db.Get(ctx, d.ID)
			require.NoError(t, err)
			require.Equal(t, d.Fingerprint, got.Fingerprint)
		}
	}
}

// TestStallLargeCommit checks that a commit larger than MemtablesMax is
// let in, with the memtables frozen by a read under their budget and with
// a full one being flushed: it waits for the flush, never for ever.
func TestStallLargeCommit(t *testing.T) {
	o := testOptions()
	o.MemtableSize = 64 << 10
	db := openT(t, t.TempDir(), o)
	defer db.Close()
	r := rand.New(rand.NewPCG(4, 4))
	require.NoError(t, db.InsertBatch(ctx, stallDocs(r, 0, 10)))
	for _, err := range db.QueryBatch(ctx, []uint64{1, 2}, 3) { // pins a view: freezes the memtable
		require.NoError(t, err)
	}
	big := stallDocs(r, 100, 2000) // about ten budgets
	require.NoError(t, db.InsertBatch(ctx, big))
	require.NoError(t, db.InsertBatch(ctx, stallDocs(r, 10_000, 2000)))
	st, err := db.Stats(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 4010, st.Documents)
}
