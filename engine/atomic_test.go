package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
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
// the commits before it stay, and its records never join a commit that a
// later process writes.
func TestBatchAtomicAcrossRecords(t *testing.T) {
	t.Parallel()
	if raceEnabled {
		t.Skip("one writer and replays of its log: no concurrency for the race detector, and 11 MB of ops to encode")
	}
	dir := t.TempDir()
	db := openT(t, dir, Options{SizeHint: 1 << 12, MemtableSize: 1 << 30, Sync: SyncAlways})
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

	segs, err := wal.Segments(nil, filepath.Join(crash, walDir))
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
			for _, d := range first {
				got, err := db.Get(ctx, d.ID)
				require.NoError(t, err, "the commit before stays")
				require.Equal(t, d, got)
			}
			// All of the commit if its records are whole, else none.
			wholeOrNone := func(db *DB, when string) {
				for _, d := range []Doc{batch[0], batch[len(batch)-1]} {
					_, err := db.Get(ctx, d.ID)
					if cut == len(full) {
						require.NoError(t, err, when)
					} else {
						require.ErrorIs(t, err, ErrNotFound, "%s: none of a commit cut off", when)
					}
				}
			}
			wholeOrNone(db, "at the open after the crash")
			_, err = db.Check(ctx)
			require.NoError(t, err)
			// The part left in the old segment stays dropped when later
			// segments hold commits: a crash's leftovers never join the
			// next commit replayed.
			after := Doc{ID: 7, Fingerprint: 7, Name: "after"}
			require.NoError(t, db.Insert(ctx, after))
			require.NoError(t, db.Close())
			db = openT(t, work, Options{})
			defer db.Close()
			got, err := db.Get(ctx, after.ID)
			require.NoError(t, err)
			require.Equal(t, after, got)
			wholeOrNone(db, "at the open after a commit in a later segment")
		})
	}
}

// TestBatchAtomicToReaders: a reader never sees part of a commit.
func TestBatchAtomicToReaders(t *testing.T) {
	t.Parallel()
	db := openT(t, t.TempDir(), Options{SizeHint: 1 << 12, MemtableSize: 1 << 30, Sync: SyncNone})
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

// encodeCommit returns the records of a commit, each its own copy.
func encodeCommit(docs []Doc, deletes []uint64) [][]byte {
	var out [][]byte
	for p := range commitParts(docs, deletes, 0) {
		out = append(out, slices.Clone(p))
	}
	return out
}
