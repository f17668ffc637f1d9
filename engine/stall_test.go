package engine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"

	"github.com/simhashdb/simhashdb/engine/internal/memtable"
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

// holdFirstFlush makes o's first flush wait, once its writes are made,
// until unblock is called; flushing is closed when it waits.
func holdFirstFlush(o *Options) (flushing <-chan struct{}, unblock func()) {
	waiting, release := make(chan struct{}), make(chan struct{})
	var once, released sync.Once
	o.knobs.flushWrites = func([]store.Writes, []*store.Batch) {
		once.Do(func() { close(waiting); <-release })
	}
	return waiting, func() { released.Do(func() { close(release) }) }
}

// TestStallBoundsMemtables holds a flush while writers go on: they wait
// once the memtables, with the commits let in, would pass MemtablesMax
// (two budgets), and the memtables are within it then; once the flush
// goes on, every write is stored.
func TestStallBoundsMemtables(t *testing.T) {
	t.Parallel()
	o := testOptions()
	o.MemtableSize = 256 << 10
	flushing, unblock := holdFirstFlush(&o)
	stalled := make(chan struct{}, 1)
	o.knobs.stalled = func(int64) {
		select {
		case stalled <- struct{}{}:
		default:
		}
	}
	db := openT(t, t.TempDir(), o)
	defer db.Close()
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
	t.Parallel()
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

// TestStallLargeCommitAmongSmall: a commit larger than the memtables'
// bound goes in while writers of small commits keep the live memtable
// busy; they run until it has.
func TestStallLargeCommitAmongSmall(t *testing.T) {
	t.Parallel()
	o := testOptions()
	o.MemtableSize = 64 << 10
	db := openT(t, t.TempDir(), o)
	defer db.Close()
	done, started := make(chan struct{}), make(chan struct{}, 2)
	errs := make(chan error, 2)
	for w := range 2 {
		go func() {
			r := rand.New(rand.NewPCG(uint64(w), 5))
			for id := 1_000_000 * (w + 1); ; id += 20 {
				if id == 1_000_000*(w+1)+20 {
					started <- struct{}{}
				}
				select {
				case <-done:
					errs <- nil
					return
				default:
				}
				if err := db.InsertBatch(ctx, stallDocs(r, id, 20)); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	<-started
	<-started // the memtables are written to from now on
	r := rand.New(rand.NewPCG(6, 6))
	big := stallDocs(r, 0, 2000) // about ten budgets
	require.NoError(t, db.InsertBatch(ctx, big))
	close(done)
	for range 2 {
		require.NoError(t, <-errs)
	}
	got, err := db.Get(ctx, big[len(big)-1].ID)
	require.NoError(t, err)
	require.Equal(t, big[len(big)-1].Fingerprint, got.Fingerprint)
}

// TestStallInTurn: a commit that waits for room holds back a small one
// that came after it, though the small one would fit: writers are let in
// in the order they came, so that the small ones cannot keep a large one
// waiting. (Let in, the small commit may still finish first: it has less
// to write.)
func TestStallInTurn(t *testing.T) {
	t.Parallel()
	o := testOptions()
	o.MemtableSize = 256 << 10
	flushing, unblock := holdFirstFlush(&o)
	waits, lets := make(chan int64, 64), make(chan int64, 64)
	o.knobs.stalled = func(cost int64) {
		select {
		case waits <- cost:
		default:
		}
	}
	o.knobs.letIn = func(cost int64) {
		select {
		case lets <- cost:
		default:
		}
	}
	db := openT(t, t.TempDir(), o)
	defer db.Close()
	defer unblock() // before Close, which waits for the flush
	r := rand.New(rand.NewPCG(7, 7))
	// A budget's worth: the flush starts, and waits.
	require.NoError(t, db.InsertBatch(ctx, stallDocs(r, 0, 600)))
	<-flushing
	for len(lets) > 0 { // the first commit's
		<-lets
	}
	big, small := stallDocs(r, 1000, 600), stallDocs(r, 5000, 1)
	done := make(chan string, 2)
	insert := func(name string, docs []Doc) {
		if err := db.InsertBatch(ctx, docs); err != nil {
			name += ": " + err.Error()
		}
		done <- name
	}
	go insert("big", big)
	bigCost := <-waits // the big commit waits for room
	go insert("small", small)
	var smallCost int64
	for waiting := true; waiting; {
		select {
		case cost := <-waits:
			waiting = cost == bigCost // until the small one waits too
			smallCost = cost
		case who := <-done:
			t.Fatalf("%s went in while the big commit waited", who)
		}
	}
	db.mu.RLock()
	room := db.memtablesMax() - db.unflushed() - db.admitting
	cost := memtable.WriteCost(len(db.design.Tables), 1, int64(len(small[0].Name)), 0)
	db.mu.RUnlock()
	require.GreaterOrEqual(t, room, cost, "the small commit would fit")
	require.Empty(t, lets, "no commit let in while the big one waited")
	unblock()
	require.Equal(t, bigCost, <-lets, "the big commit let in first")
	require.Equal(t, smallCost, <-lets, "then the small one")
	require.ElementsMatch(t, []string{"big", "small"}, []string{<-done, <-done}, "both written")
}
