package engine

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestConcurrentReadersWriters: writers insert while readers query; a
// document acknowledged before a query starts must be in its answer, and
// flushes run underneath. Meant for go test -race.
func TestConcurrentReadersWriters(t *testing.T) {
	t.Parallel()
	db := openT(t, t.TempDir(), Options{SizeHint: 1 << 12, MemtableSize: 16 << 10, Sync: SyncInterval})
	defer db.Close()
	const writers, each = 4, 300
	var acked [writers]atomic.Int64 // documents 0..acked-1 of writer w are acknowledged
	fpOf := func(w, i int) uint64 { return rand.New(rand.NewPCG(uint64(w), uint64(i))).Uint64() }
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				assert.NoError(t, db.Insert(ctx, Doc{ID: uint64(w*each + i), Fingerprint: fpOf(w, i)}))
				acked[w].Store(int64(i + 1))
			}
		}()
	}
	done := make(chan struct{})
	var rg sync.WaitGroup
	for rd := range 3 {
		rg.Add(1)
		go func() {
			defer rg.Done()
			r := rand.New(rand.NewPCG(99, uint64(rd)))
			for {
				select {
				case <-done:
					return
				default:
				}
				w := r.IntN(writers)
				n := acked[w].Load()
				if n == 0 {
					continue
				}
				i := r.IntN(int(n))
				if i%2 == 1 {
					near, err := db.QueryFingerprints(ctx, nil, fpOf(w, i)^1, 1)
					if !assert.NoError(t, err) {
						return
					}
					assert.Contains(t, near, Near{fpOf(w, i), 1})
					continue
				}
				m, err := db.Query(ctx, fpOf(w, i)^1, 1)
				if !assert.NoError(t, err) {
					return
				}
				assert.Contains(t, m, Match{Doc{ID: uint64(w*each + i), Fingerprint: fpOf(w, i)}, 1})
			}
		}()
	}
	wg.Wait()
	close(done)
	rg.Wait()
	require.NoError(t, db.Flush(ctx))
	_, err := db.Check(ctx)
	require.NoError(t, err)
}

func TestInsertIfNew(t *testing.T) {
	t.Parallel()
	db := openT(t, t.TempDir(), testOptions())
	defer db.Close()
	m, ok, err := db.InsertIfNew(ctx, Doc{ID: 1, Fingerprint: 0xff00, Name: "a"}, 3)
	require.NoError(t, err)
	assert.True(t, ok)
	assert.Empty(t, m)
	m, ok, err = db.InsertIfNew(ctx, Doc{ID: 2, Fingerprint: 0xff07, Name: "b"}, 3)
	require.NoError(t, err)
	assert.False(t, ok)
	assert.Equal(t, []Match{{Doc{ID: 1, Fingerprint: 0xff00, Name: "a"}, 3}}, m)
	// Many crawlers offer near-duplicates at once: exactly one wins.
	var wins atomic.Int32
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, ok, err := db.InsertIfNew(ctx, Doc{ID: uint64(10 + i), Fingerprint: 1<<40 | uint64(i&1)}, 2)
			assert.NoError(t, err)
			if ok {
				wins.Add(1)
			}
		}()
	}
	wg.Wait()
	assert.Equal(t, int32(1), wins.Load())
	require.ErrorIs(t, db.Insert(ctx, Doc{ID: 5, Name: strings.Repeat("x", MaxName+1)}), ErrInput)
	err = db.Insert(ctx, Doc{ID: 5, Name: "a\x00b"})
	require.ErrorIs(t, err, ErrInput, "a NUL in a name")
	require.ErrorContains(t, err, "NUL byte at offset 1")
	require.ErrorIs(t, db.Load(ctx, DocsOf([]Doc{{ID: 6, Name: strings.Repeat("\x00", 1100)}})), ErrInput)
}

// TestQueryAppendAllocs: a warm query into a reused buffer allocates
// nothing, matches or not (the cache holds its blocks and postings).
func TestQueryAppendAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("loads an index")
	}
	// One processor: Pebble's iterators come from a sync.Pool, which
	// misses when a goroutine moves to another processor between Put and
	// Get; that is the pool's, not a query's, allocation.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
	db := openT(t, t.TempDir(), testOptions())
	t.Cleanup(func() { db.Close() }) // before the folder is removed
	docs := corpus(3000, 11)
	for _, d := range docs {
		require.NoError(t, db.Insert(ctx, d))
	}
	require.NoError(t, db.Flush(ctx))
	qs := []uint64{docs[5].Fingerprint, docs[1500].Fingerprint ^ 3, 0, 0x123456789}
	var buf []Match
	for _, q := range qs { // warm
		var err error
		buf, err = db.QueryAppend(ctx, buf[:0], q, 3)
		require.NoError(t, err)
	}
	// A background compaction that lands meanwhile makes the next queries
	// read their postings again (once): the least of a few rounds is the
	// steady state.
	i, least := 0, math.Inf(1)
	for range 5 {
		least = min(least, testing.AllocsPerRun(200, func() {
			buf, _ = db.QueryAppend(ctx, buf[:0], qs[i%len(qs)], 3)
			i++
		}))
	}
	assert.Zero(t, least, "allocations per warm QueryAppend")
	// QueryFingerprints on the flushed index (no write in memory): the
	// tables alone, nothing either.
	var near []Near
	least = math.Inf(1)
	for range 5 {
		least = min(least, testing.AllocsPerRun(200, func() {
			near, _ = db.QueryFingerprints(ctx, near[:0], qs[i%len(qs)], 3)
			i++
		}))
	}
	assert.Zero(t, least, "allocations per warm QueryFingerprints")
}
