package engine

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/stretchr/testify/require"

	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/store"
)

// applyIDs is the ids the commits of applyCommit write: few, so that
// later commits replace and delete what earlier ones wrote.
const applyIDs = 61

// applyCommit is the commit at position p of a replicated log, as a test
// applies it: an insert of a document whose fingerprint and name depend on
// p, and at every third position a delete.
func applyCommit(p uint64) Commit {
	c := Commit{Position: p, Insert: []Doc{{ID: p%applyIDs + 1, Fingerprint: p * 0x9e3779b97f4a7c15, Name: fmt.Sprint("doc-at-", p)}}}
	if p%3 == 0 {
		c.Delete = []uint64{(p*7)%applyIDs + 1}
	}
	return c
}

// applyModel is the documents that commits 1..p of applyCommit leave,
// but those at the positions in skipped (a position applied alone).
func applyModel(p uint64, skipped ...uint64) map[uint64]Doc {
	docs := map[uint64]Doc{}
	for i := uint64(1); i <= p; i++ {
		if slices.Contains(skipped, i) {
			continue
		}
		c := applyCommit(i)
		for _, d := range c.Insert {
			docs[d.ID] = d
		}
		for _, id := range c.Delete {
			delete(docs, id)
		}
	}
	return docs
}

// requireApplied checks that db holds exactly what commits 1..Applied()
// leave (but those skipped), and passes Check.
func requireApplied(t *testing.T, db *DB, msg string, skipped ...uint64) {
	t.Helper()
	want := applyModel(db.Applied(), skipped...)
	for id := uint64(1); id <= applyIDs; id++ {
		got, err := db.Get(ctx, id)
		if d, ok := want[id]; ok {
			require.NoError(t, err, "%s: applied %d: document %d", msg, db.Applied(), id)
			require.Equal(t, d, got, "%s: applied %d", msg, db.Applied())
		} else {
			require.ErrorIs(t, err, ErrNotFound, "%s: applied %d: document %d, deleted or never written, is there: %+v", msg, db.Applied(), id, got)
		}
	}
	rep, err := db.Check(ctx)
	require.NoError(t, err, "%s: %+v", msg, rep)
}

// TestApply checks commits with positions: applied in order, refused whole
// at or below the last (ErrApplied), kept across a close, a flush and a
// read-only open; a position alone moves Applied; commits without one
// leave it; an index that never had one keeps no position key.
func TestApply(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db, err := Open(dir, Options{SizeHint: 1 << 12, MemtableSize: 32 << 10})
	require.NoError(t, err)
	require.Zero(t, db.Applied())
	for p := uint64(1); p <= 40; p++ {
		require.NoError(t, db.Apply(ctx, applyCommit(p)))
		require.Equal(t, p, db.Applied())
	}
	requireApplied(t, db, "applied")
	for _, p := range []uint64{40, 1, 39} {
		c := applyCommit(p)
		c.Insert = append(c.Insert, Doc{ID: 1000 + p, Fingerprint: p})
		require.ErrorIs(t, db.Apply(ctx, c), ErrApplied, "position %d", p)
		_, err := db.Get(ctx, 1000+p)
		require.ErrorIs(t, err, ErrNotFound, "position %d: a refused commit wrote", p)
	}
	require.NoError(t, db.Apply(ctx, Commit{Position: 41})) // a command that changed nothing
	require.Equal(t, uint64(41), db.Applied())
	require.ErrorIs(t, db.Apply(ctx, applyCommit(41)), ErrApplied)
	// Writes without a position neither need nor move one.
	require.NoError(t, db.Insert(ctx, Doc{ID: 5000, Fingerprint: 7}))
	require.NoError(t, db.Delete(ctx, 5000))
	require.Equal(t, uint64(41), db.Applied())
	for p := uint64(42); p <= 60; p++ {
		require.NoError(t, db.Apply(ctx, applyCommit(p)))
	}
	requireApplied(t, db, "before closing", 41)
	require.NoError(t, db.Close())

	db, err = Open(dir, Options{}) // replayed from the log
	require.NoError(t, err)
	require.Equal(t, uint64(60), db.Applied())
	requireApplied(t, db, "reopened", 41)
	require.NoError(t, db.Apply(ctx, Commit{Position: 61}))
	require.ErrorIs(t, db.Apply(ctx, Commit{Position: 61}), ErrApplied)
	require.NoError(t, db.Flush(ctx))
	require.NoError(t, db.Close())

	db, err = Open(dir, Options{ReadOnly: true}) // from the tables
	require.NoError(t, err)
	require.Equal(t, uint64(61), db.Applied())
	requireApplied(t, db, "flushed, read-only", 41, 61)
	require.NoError(t, db.Close())

	plain := t.TempDir()
	db, err = Open(plain, Options{})
	require.NoError(t, err)
	require.NoError(t, db.Insert(ctx, Doc{ID: 1, Fingerprint: 1}))
	require.NoError(t, db.Flush(ctx))
	_, _, err = db.store.Get(format.MetaApplied)
	require.ErrorIs(t, err, store.ErrKeyNotFound, "an index without positions keeps the key")
	require.Zero(t, db.Applied())
	require.NoError(t, db.Close())
}

// TestApplyPowerCut applies a replicated log's commits one after another
// while the power is cut, many times over one index, as a replica with
// SyncNone (the log's servers hold the commits) or SyncAlways would: after
// each cut the index holds exactly the commits up to Applied (none after,
// none missing), with SyncAlways at least every one acknowledged before the
// cut, and the applier resumes after Applied. SIMHASHDB_POWERCUT_ROUNDS
// sets the number of cuts.
func TestApplyPowerCut(t *testing.T) {
	t.Parallel()
	rounds := powerCutRounds()
	r := rand.New(rand.NewPCG(17, 17))
	fs := newCrashableFS()
	acked := uint64(0) // the last commit acknowledged with SyncAlways before a cut
	back := 0          // cuts that took Applied below what had been applied
	for round := range rounds {
		mode := []SyncMode{SyncNone, SyncAlways}[r.IntN(2)]
		// Small memtables flush (and sync) every few dozen commits; large
		// ones leave every commit of the round to the log.
		memtable := []int64{8 << 10, 1 << 20}[r.IntN(2)]
		db, err := Open("/index", Options{SizeHint: 1 << 12, MemtableSize: memtable, Sync: mode, FS: fs})
		require.NoError(t, err, "round %d", round)
		requireApplied(t, db, fmt.Sprint("round ", round))
		require.GreaterOrEqual(t, db.Applied(), acked, "round %d: a commit acknowledged with SyncAlways is lost", round)
		// The applier says how far it got; the cut takes that under the
		// same lock as the file system's state.
		var mu sync.Mutex
		applied, stop := db.Applied(), false
		progress := make(chan uint64, 1)
		done := make(chan error, 1)
		go func() {
			for {
				mu.Lock()
				p, stopped := applied+1, stop
				mu.Unlock()
				if stopped {
					done <- nil
					return
				}
				if err := db.Apply(ctx, applyCommit(p)); err != nil {
					done <- err
					return
				}
				mu.Lock()
				applied = p
				mu.Unlock()
				select {
				case progress <- p:
				default:
				}
			}
		}()
		start, want := db.Applied(), db.Applied()+1+uint64(r.IntN(60))
		for p := start; p < want; {
			select {
			case p = <-progress:
			case err := <-done:
				require.NoError(t, err, "round %d", round)
			}
		}
		cfg := vfs.CrashCloneCfg{}
		if c := r.IntN(3); c > 0 {
			cfg.UnsyncedDataPercent, cfg.RNG = 100/c, rand.New(rand.NewPCG(uint64(round), 3))
		}
		mu.Lock()
		cut := fs.CrashClone(cfg)
		before := applied
		stop = true
		mu.Unlock()
		require.NoError(t, <-done, "round %d", round)
		db.Close() // of the file system before the cut: its errors do not matter
		if mode == SyncAlways {
			acked = before
		} else {
			acked = 0
		}
		fs = cut
		db, err = Open("/index", Options{FS: fs, ReadOnly: true})
		require.NoError(t, err, "round %d", round)
		if db.Applied() < before {
			back++
		}
		require.NoError(t, db.Close())
	}
	db, err := Open("/index", Options{FS: fs})
	require.NoError(t, err)
	requireApplied(t, db, "at the end")
	require.GreaterOrEqual(t, db.Applied(), acked)
	require.NoError(t, db.Close())
	t.Logf("%d power cuts: %d took back commits not synced, and the index held exactly the commits up to its applied position after each", rounds, back)
}

// TestCheckPositionOrder checks that Check reports a log whose commits'
// positions do not grow (a log written by something else than Apply).
func TestCheckPositionOrder(t *testing.T) {
	t.Parallel()
	db, err := Open(t.TempDir(), Options{})
	require.NoError(t, err)
	defer db.Close()
	require.NoError(t, db.Apply(ctx, applyCommit(10)))
	_, err = db.Check(ctx)
	require.NoError(t, err)
	for p := range commitParts(nil, nil, 4) {
		_, err := db.currentLog().Append(format.RecOps, p)
		require.NoError(t, err)
	}
	_, err = db.Check(ctx)
	require.ErrorIs(t, err, ErrCorrupt)
	require.ErrorContains(t, err, "has position 4, not above 10")
}

// TestCheckpoint: a checkpoint taken between commits, with some in the
// tables and some only in the log, opens as an index of its own holding
// exactly the commits up to the position it returned, on the disk and in
// memory; writes to the original afterwards leave it alone, and the copy
// takes the stream on from there.
func TestCheckpoint(t *testing.T) {
	for _, fs := range []vfs.FS{vfs.Default, vfs.NewMem()} {
		root := t.TempDir()
		if fs != vfs.Default {
			root = "/mem"
		}
		src := filepath.Join(root, "src")
		db, err := Open(src, Options{SizeHint: 1 << 12, MemtableSize: 32 << 10, FS: fs})
		require.NoError(t, err)
		for p := uint64(1); p <= 300; p++ {
			require.NoError(t, db.Apply(ctx, applyCommit(p)))
			if p == 200 {
				require.NoError(t, db.Flush(ctx))
			}
		}
		copyDir := filepath.Join(root, "copy")
		applied, err := db.Checkpoint(ctx, copyDir)
		require.NoError(t, err)
		require.Equal(t, uint64(300), applied)
		_, err = db.Checkpoint(ctx, copyDir)
		require.ErrorIs(t, err, ErrInput, "into a folder that exists")
		for p := uint64(301); p <= 400; p++ {
			require.NoError(t, db.Apply(ctx, applyCommit(p)))
		}
		require.NoError(t, db.Close())

		cp, err := Open(copyDir, Options{FS: fs})
		require.NoError(t, err)
		require.Equal(t, applied, cp.Applied())
		requireApplied(t, cp, "the checkpoint")
		for p := applied + 1; p <= 320; p++ {
			require.NoError(t, cp.Apply(ctx, applyCommit(p)))
		}
		requireApplied(t, cp, "the checkpoint, applying on")
		require.NoError(t, cp.Close())

		db, err = Open(src, Options{FS: fs, ReadOnly: true})
		require.NoError(t, err)
		require.Equal(t, uint64(400), db.Applied())
		requireApplied(t, db, "the original")
		_, err = db.Checkpoint(ctx, filepath.Join(root, "other"))
		require.ErrorIs(t, err, ErrReadOnly)
		require.NoError(t, db.Close())
	}
}
