package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/wal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bigBatch is a commit that takes several log records.
func bigBatch(n int, base uint64) []Doc {
	r := rand.New(rand.NewPCG(base, 1))
	docs := make([]Doc, n)
	for i := range docs {
		docs[i] = Doc{ID: base + uint64(i), Fingerprint: r.Uint64(), Name: fmt.Sprintf("document-%012d", i)}
	}
	return docs
}

// TestBatchAtomicAcrossRecords: a commit larger than one log record, cut
// off by a crash anywhere in its records, comes back whole or not at all,
// and the commits before it stay.
func TestBatchAtomicAcrossRecords(t *testing.T) {
	dir := t.TempDir()
	db := openT(t, dir, Options{Expected: 1 << 12, MemtableSize: 1 << 30, Sync: SyncAlways})
	first := bigBatch(10, 1)
	require.NoError(t, db.InsertBatch(ctx, first))
	batch := bigBatch(300_000, 1<<32) // about 11 MB of ops: three records
	require.Greater(t, len(encodeCommit(batch, nil)), 2)
	require.NoError(t, db.InsertBatch(ctx, batch))
	// What a crash leaves: the files as they are now (nothing flushed).
	crash := t.TempDir()
	copyDir(t, filepath.Join(dir, store.Dir), filepath.Join(crash, store.Dir))
	copyDir(t, filepath.Join(dir, walDir), filepath.Join(crash, walDir))
	require.NoError(t, db.Close())

	segs, err := wal.Segments(filepath.Join(crash, walDir))
	require.NoError(t, err)
	seg := filepath.Join(crash, walDir, wal.SegmentName(segs[len(segs)-1]))
	full, err := os.ReadFile(seg)
	require.NoError(t, err)
	for _, cut := range []int{len(full), len(full) - 1, len(full) - 5<<20, len(full) - 9<<20, len(full) - 11<<20} {
		t.Run(fmt.Sprintf("cut %d of %d", cut, len(full)), func(t *testing.T) {
			work := t.TempDir()
			copyDir(t, filepath.Join(crash, store.Dir), filepath.Join(work, store.Dir))
			copyDir(t, filepath.Join(crash, walDir), filepath.Join(work, walDir))
			require.NoError(t, os.WriteFile(filepath.Join(work, walDir, filepath.Base(seg)), full[:cut], 0o644))
			db := openT(t, work, Options{})
			defer db.Close()
			for _, d := range first {
				got, err := db.Get(ctx, d.ID)
				require.NoError(t, err, "the commit before stays")
				require.Equal(t, d, got)
			}
			_, errFirst := db.Get(ctx, batch[0].ID)
			_, errLast := db.Get(ctx, batch[len(batch)-1].ID)
			if cut == len(full) {
				require.NoError(t, errFirst)
				require.NoError(t, errLast)
			} else {
				require.ErrorIs(t, errFirst, ErrNotFound, "none of a commit cut off")
				require.ErrorIs(t, errLast, ErrNotFound)
			}
			_, err = db.Check(ctx)
			require.NoError(t, err)
		})
	}
}

// TestBatchAtomicToReaders: a reader never sees part of a commit.
func TestBatchAtomicToReaders(t *testing.T) {
	db := openT(t, t.TempDir(), Options{Expected: 1 << 12, MemtableSize: 1 << 30, Sync: SyncNone})
	defer db.Close()
	batch := bigBatch(300_000, 1<<32)
	firstID, lastID := batch[0].ID, batch[len(batch)-1].ID
	var done atomic.Bool
	var wg sync.WaitGroup
	var looks, torn int
	wg.Add(1)
	go func() {
		defer wg.Done()
		for !done.Load() {
			// The last first: once it is there, the first must be.
			_, errLast := db.Get(ctx, lastID)
			_, errFirst := db.Get(ctx, firstID)
			looks++
			if errLast == nil && errFirst != nil {
				torn++
			}
		}
	}()
	require.NoError(t, db.InsertBatch(ctx, batch))
	done.Store(true)
	wg.Wait()
	assert.Zero(t, torn, "of %d looks", looks)
	for _, d := range []Doc{batch[0], batch[len(batch)/2], batch[len(batch)-1]} {
		got, err := db.Get(ctx, d.ID)
		require.NoError(t, err)
		require.Equal(t, d, got)
	}
}
