package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/simhashdb/simhashdb/internal/spill"
	"github.com/simhashdb/simhashdb/wal"
	"github.com/stretchr/testify/require"
)

// ackModel keeps what a test wrote: documents acknowledged (they must be
// there after any fault) and documents whose write failed (they may be).
type ackModel struct {
	acked, unsure map[uint64]Doc
	next          uint64
	r             *rand.Rand
}

func newAckModel(seed uint64) *ackModel {
	return &ackModel{acked: map[uint64]Doc{}, unsure: map[uint64]Doc{}, r: rand.New(rand.NewPCG(seed, seed))}
}

// batch returns n new documents.
func (m *ackModel) batch(n int) []Doc {
	docs := make([]Doc, n)
	for i := range docs {
		m.next++
		docs[i] = Doc{ID: m.next, Fingerprint: m.r.Uint64(), Name: "doc"}
	}
	return docs
}

func (m *ackModel) wrote(docs []Doc, err error) {
	for _, d := range docs {
		if err == nil {
			m.acked[d.ID] = d
		} else {
			m.unsure[d.ID] = d
		}
	}
}

// verify checks db against the model: every acknowledged document is there
// and found by a query; any other is there as written or not at all.
func (m *ackModel) verify(t *testing.T, db *DB) {
	t.Helper()
	for id, want := range m.acked {
		got, err := db.Get(ctx, id)
		require.NoError(t, err, "acknowledged document %d", id)
		require.Equal(t, want, got)
	}
	for id, want := range m.unsure {
		got, err := db.Get(ctx, id)
		if errors.Is(err, ErrNotFound) {
			continue
		}
		require.NoError(t, err)
		require.Equal(t, want, got, "document %d, whose write failed", id)
	}
	n := 0
	for _, d := range m.acked {
		if n++; n > 50 {
			break
		}
		ms, err := db.Query(ctx, d.Fingerprint, 0)
		require.NoError(t, err)
		require.Contains(t, ms, Match{Doc: d})
	}
}

// fillIndex makes an index in dir of flushed documents, then logged ones
// (not flushed), as m writes them.
func fillIndex(t *testing.T, dir string, m *ackModel, flushed, logged int) {
	t.Helper()
	db := openT(t, dir, testOptions())
	docs := m.batch(flushed)
	m.wrote(docs, db.InsertBatch(ctx, docs))
	require.NoError(t, db.Flush(ctx))
	if logged > 0 {
		docs = m.batch(logged)
		m.wrote(docs, db.InsertBatch(ctx, docs))
	}
	require.NoError(t, db.Close())
}

// TestDiskFull fills a small disk with inserts and their flushes: the
// writes fail with ErrDiskFull (no panic, no hang), a reopen on the full
// disk returns, every acknowledged document survives, and once space is
// freed writes work again, first on the same DB, then after a reopen.
func TestDiskFull(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	q := newQuotaFS(6 << 20)
	o := testOptions()
	o.FS, o.MemtableSize = q, 128<<10
	db := openT(t, dir, o)
	m := newAckModel(1)
	var err error
	for i := 0; i < 10_000 && err == nil; i++ {
		docs := m.batch(200)
		err = db.InsertBatch(ctx, docs)
		m.wrote(docs, err)
	}
	require.ErrorIs(t, err, ErrDiskFull, "the disk filled up")
	t.Logf("full after %d documents: %v", len(m.acked), err)
	for range 3 { // it stays an error, promptly
		docs := m.batch(200)
		start := time.Now()
		err := db.InsertBatch(ctx, docs)
		m.wrote(docs, err)
		if err != nil {
			require.ErrorIs(t, err, ErrDiskFull)
		}
		require.Less(t, time.Since(start), 10*time.Second)
	}
	// Space comes back: the flusher's retry or a Flush makes writes work.
	q.setLimit(1 << 30)
	require.Eventually(t, func() bool {
		docs := m.batch(10)
		err := db.InsertBatch(ctx, docs)
		m.wrote(docs, err)
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "writes resume once there is room")
	require.NoError(t, db.Flush(ctx))
	m.verify(t, db)
	require.NoError(t, db.Close())

	// Full again, with writes in the log that a reopen must flush.
	db = openT(t, dir, o)
	docs := m.batch(5000)
	m.wrote(docs, db.InsertBatch(ctx, docs))
	q.mu.Lock()
	q.limit = q.used + 64<<10
	q.mu.Unlock()
	db.Close() // an error, or not: what is acknowledged is in the log
	start := time.Now()
	db, err = Open(dir, o)
	t.Logf("reopened on a full disk in %v: %v", time.Since(start), err)
	require.Less(t, time.Since(start), 10*time.Second)
	if err == nil {
		m.verify(t, db)
		require.NoError(t, db.Close())
	} else {
		require.ErrorIs(t, err, ErrDiskFull)
	}
	q.setLimit(1 << 30)
	db = openT(t, dir, o)
	defer db.Close()
	docs = m.batch(100)
	m.wrote(docs, db.InsertBatch(ctx, docs))
	require.NoError(t, db.Flush(ctx))
	m.verify(t, db)
	_, err = db.Check(ctx)
	require.NoError(t, err)
}

// TestWriteFaults injects ENOSPC and EIO at every write and fsync of the
// engine's log and of its flushes (the sstable a flush writes, and the
// folders synced), one fault per run: no panic, an error from the call
// that met it (ErrDiskFull for ENOSPC), and after a reopen every
// acknowledged document is there and Check passes.
func TestWriteFaults(t *testing.T) {
	t.Parallel()
	ours := func(path string) bool {
		return strings.Contains(path, string(filepath.Separator)+walDir) || strings.Contains(path, store.TmpPrefix)
	}
	work := func(db *DB, m *ackModel) error {
		for i := range 12 {
			docs := m.batch(50)
			err := db.InsertBatch(ctx, docs)
			m.wrote(docs, err)
			if err == nil && i%4 == 3 {
				err = db.Flush(ctx)
			}
			if err != nil {
				return err
			}
		}
		return nil
	}
	// A run without faults counts the points.
	points := 0
	count := &faultFS{FS: newQuotaFS(1 << 40), fail: func(op, path string) error {
		if (op == "write" || op == "sync") && ours(path) {
			points++
		}
		return nil
	}}
	o := testOptions()
	o.Sync, o.FS = SyncAlways, count
	db := openT(t, t.TempDir(), o)
	require.NoError(t, work(db, newAckModel(2)))
	require.NoError(t, db.Close())
	require.Greater(t, points, 40)
	t.Logf("%d write and sync points", points)

	for _, errno := range []syscall.Errno{syscall.ENOSPC, syscall.EIO} {
		for at := 1; at <= points; at++ {
			dir := t.TempDir()
			n := 0
			var hit string
			fs := &faultFS{FS: newQuotaFS(1 << 40), fail: func(op, path string) error {
				if (op == "write" || op == "sync") && ours(path) {
					if n++; n == at {
						hit = op + " " + path
						return injected(op, path, errno)
					}
				}
				return nil
			}}
			o.FS = fs
			m := newAckModel(2)
			db, err := Open(dir, o)
			if err == nil {
				err = work(db, m)
				db.Close()
			}
			require.Error(t, err, "%v at %s", errno, hit)
			require.ErrorIs(t, err, errInjected, "%v at %s", errno, hit)
			if errno == syscall.ENOSPC {
				require.ErrorIs(t, err, ErrDiskFull, "at %s", hit)
			}
			o.FS = nil
			db = openT(t, dir, o)
			m.verify(t, db)
			_, err = db.Check(ctx)
			require.NoError(t, err, "%v at %s", errno, hit)
			require.NoError(t, db.Close())
		}
	}
}

// TestReadOnlyMedium opens an index on a medium where every write fails
// with EROFS (a read-only mount): with ReadOnly it opens and answers
// queries, and writes fail with ErrReadOnly.
func TestReadOnlyMedium(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := newAckModel(3)
	fillIndex(t, dir, m, 2000, 100)

	o := testOptions()
	o.FS = &faultFS{FS: os_(), fail: readOnlyMedium}
	_, err := Open(dir, o)
	require.ErrorIs(t, err, syscall.EROFS, "a writable open needs a writable medium")
	require.ErrorIs(t, err, ErrReadOnly)
	o.ReadOnly = true
	db := openT(t, dir, o)
	defer db.Close()
	m.verify(t, db)
	require.ErrorIs(t, db.Insert(ctx, Doc{ID: 1}), ErrReadOnly)
	require.ErrorIs(t, db.Flush(ctx), ErrReadOnly)
	_, err = db.Check(ctx)
	require.NoError(t, err)
}

func os_() *quotaFS { return newQuotaFS(1 << 40) }

// TestReplayInSteps: an open replays a log much larger than the memtable
// budget in flushes of that budget, and an open that dies after a step
// leaves the next one less to replay.
func TestReplayInSteps(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	big := testOptions()
	big.MemtableSize = 1 << 30 // everything stays in the log
	db := openT(t, dir, big)
	m := newAckModel(4)
	for range 20 {
		docs := m.batch(1000)
		m.wrote(docs, db.InsertBatch(ctx, docs))
	}
	require.NoError(t, db.Close())

	crash := errors.New("simulated crash")
	steps := 0
	small := testOptions() // 64 KiB: a step is a few thousand documents
	crashing := small
	crashing.knobs.replayStep = func() error { steps++; return crash }
	var froms []int64
	for run := 0; ; run++ {
		require.Less(t, run, 100, "replay makes progress")
		db, err := Open(dir, crashing)
		if err == nil {
			require.NoError(t, db.Close())
			break
		}
		require.ErrorIs(t, err, crash)
		st, err := Open(dir, Options{ReadOnly: true})
		require.NoError(t, err)
		froms = append(froms, st.st.docs)
		require.NoError(t, st.Close())
	}
	require.Greater(t, len(froms), 2)
	for i := 1; i < len(froms); i++ {
		require.Greater(t, froms[i], froms[i-1], "each open that died kept its step")
	}
	db = openT(t, dir, small)
	defer db.Close()
	m.verify(t, db)
	s, err := db.Stats(ctx)
	require.NoError(t, err)
	require.LessOrEqual(t, s.MemtableBytes, 2*small.MemtableSize, "the memtable stays in its budget")
}

// TestDamagedSSTable flips bytes in the middle of the index's sstables:
// reads through the API return errors (or the right answer, where the
// flip missed what they read), and the process lives.
func TestDamagedSSTable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	m := newAckModel(5)
	fillIndex(t, dir, m, 20_000, 0)
	ssts, err := filepath.Glob(filepath.Join(dir, store.Dir, "*.sst"))
	require.NoError(t, err)
	require.NotEmpty(t, ssts)
	for _, p := range ssts {
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		for i := len(b) / 8; i < len(b)*7/8; i += len(b) / 16 {
			b[i] ^= 0xff
		}
		require.NoError(t, os.WriteFile(p, b, 0o644))
	}
	o := testOptions()
	o.ReadOnly = true
	db, err := Open(dir, o)
	if err != nil {
		require.ErrorIs(t, err, ErrCorrupt)
		return
	}
	defer db.Close()
	failed := 0
	for id, want := range m.acked {
		got, err := db.Get(ctx, id)
		if err != nil {
			failed++
			require.ErrorIs(t, err, ErrCorrupt, "document %d", id)
			continue
		}
		require.Equal(t, want, got)
	}
	for _, d := range m.acked {
		if _, err := db.Query(ctx, d.Fingerprint, 3); err != nil {
			failed++
			require.ErrorIs(t, err, ErrCorrupt)
		}
	}
	_, err = db.Check(ctx)
	require.Error(t, err)
	require.Positive(t, failed, "the damage was met")
}

// TestDamagedLogRecord flips every byte of the last record of the log, and
// of one in its middle, and opens the index: never silent. A damaged last
// record is discarded with a warning, kept in a quarantine file, and Check
// fails until that file is removed (strict recovery refuses to open); one
// that looks cut off is a torn tail. Damage in the middle refuses to open
// unless point-in-time recovery is asked for.
func TestDamagedLogRecord(t *testing.T) {
	t.Parallel()
	src := t.TempDir()
	db := openT(t, src, testOptions())
	m := newAckModel(6)
	for range 5 {
		docs := m.batch(1) // one document a record: a small record
		m.wrote(docs, db.InsertBatch(ctx, docs))
	}
	require.NoError(t, db.Close())
	segs, err := filepath.Glob(filepath.Join(src, walDir, "*.wal"))
	require.NoError(t, err)
	seg := segs[len(segs)-1]
	data, err := os.ReadFile(seg)
	require.NoError(t, err)
	rec := (len(data)) / 5
	require.Equal(t, 5*rec, len(data), "five records of one size")
	damaged, torn := 0, 0
	for _, at := range []int{4 * rec, 2 * rec} {
		last := at == 4*rec
		for i := at; i < at+rec; i++ {
			dir := t.TempDir()
			require.NoError(t, os.CopyFS(dir, os.DirFS(src)))
			d := slices.Clone(data)
			d[i] ^= 0x08
			require.NoError(t, os.WriteFile(filepath.Join(dir, walDir, filepath.Base(seg)), d, 0o644))
			var logs strings.Builder
			o := testOptions()
			o.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelWarn}))
			db, err := Open(dir, o)
			if !last {
				require.ErrorIs(t, err, ErrCorrupt, "byte %d of a record at %d (%d bytes): %s", i, at, rec, logs.String())
				require.ErrorContains(t, err, filepath.Base(seg))
				o.WALRecovery = WALRecoverPointInTime
				db, err = Open(dir, o)
				require.NoError(t, err)
				for _, id := range []uint64{1, 2} {
					_, err := db.Get(ctx, id)
					require.NoError(t, err, "records before the damage are kept")
				}
				_, err = db.Check(ctx)
				require.ErrorContains(t, err, "damaged", "Check reports what was discarded")
				require.NoError(t, db.Close())
				continue
			}
			require.NoError(t, err, "byte %d", i)
			_, gone := db.Get(ctx, 5)
			_, cerr := db.Check(ctx)
			require.NoError(t, db.Close())
			if logs.Len() == 0 {
				// Only a flip in the length can make the frame look cut off.
				torn++
				require.Less(t, i, at+4, "byte %d: discarded without a word", i)
				continue
			}
			damaged++
			require.ErrorIs(t, gone, ErrNotFound)
			require.Contains(t, logs.String(), "discarded a damaged part of the write-ahead log")
			require.Contains(t, logs.String(), fmt.Sprintf("offset %d", at))
			require.ErrorContains(t, cerr, ".damaged", "Check fails while the quarantine file is there")
			kept, err := wal.Quarantined(nil, filepath.Join(dir, walDir))
			require.NoError(t, err)
			require.Len(t, kept, 1)
			require.NoError(t, os.Remove(kept[0]))
			db = openT(t, dir, o)
			_, err = db.Check(ctx)
			require.NoError(t, err, "once the file is removed")
			require.NoError(t, db.Close())
			// Strict recovery refuses the same damage.
			dir2 := t.TempDir()
			require.NoError(t, os.CopyFS(dir2, os.DirFS(src)))
			require.NoError(t, os.WriteFile(filepath.Join(dir2, walDir, filepath.Base(seg)), d, 0o644))
			o.WALRecovery = WALRecoverStrict
			_, err = Open(dir2, o)
			require.ErrorIs(t, err, ErrCorrupt)
		}
	}
	t.Logf("last record: %d flips reported as damage, %d looked like a torn tail", damaged, torn)
	require.Positive(t, damaged)
}

// TestLoadDiskFull: a bulk load that the disk has no room for is refused
// as ErrDiskFull: before it writes a file where the disk says so, and when
// a write of its files fails with ENOSPC; nothing of it is stored, no
// scratch folder is left, and the index takes the same load once there is
// room.
func TestLoadDiskFull(t *testing.T) {
	t.Parallel()
	docs := make([]Doc, 200_000)
	for i, fp := range fingerprints.Uniform(len(docs), 3) {
		docs[i] = Doc{ID: uint64(i + 1), Fingerprint: fp, Name: fmt.Sprintf("https://example.com/page/%d", i)}
	}
	for _, tc := range []struct {
		name     string
		written  bool // the load writes files before it fails
		shortBy  int64
		failFile string
		memory   int64 // sorted on disk, in runs of this many bytes
	}{
		{name: "no room for its estimate", shortBy: 1 << 20},
		{name: "a write fails", written: true, failFile: "table-002.sst"},
		{name: "sorted on disk: no room for its estimate", written: true, shortBy: 1 << 20, memory: 1 << 20},
		{name: "sorted on disk: a run's write fails", written: true, failFile: "run-3-by-posting", memory: 1 << 20},
		{name: "sorted on disk: a write fails", written: true, failFile: "table-002.sst", memory: 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			q := newQuotaFS(1 << 40)
			var full atomic.Bool
			o := testOptions()
			o.knobs.loadMemory = tc.memory
			o.FS = &faultFS{FS: q, fail: func(op, path string) error {
				if op == "write" && full.Load() && strings.HasSuffix(path, tc.failFile) && tc.failFile != "" {
					return injected(op, path, syscall.ENOSPC)
				}
				return nil
			}}
			db := openT(t, dir, o)
			before := q.usedBytes()
			if tc.shortBy > 0 {
				p := &spill.Part{}
				for _, d := range docs {
					p.Add(d.ID, d.Fingerprint, d.Sketch, d.Name)
				}
				q.setLimit(before + int64(loadSize(p, len(db.design.Tables))) - tc.shortBy)
			}
			full.Store(true)
			err := db.Load(ctx, DocsOf(docs))
			require.ErrorIs(t, err, ErrDiskFull)
			if !tc.written {
				require.Less(t, q.usedBytes()-before, int64(1<<20), "refused before writing its files")
			}
			ents, err := os.ReadDir(dir)
			require.NoError(t, err)
			for _, e := range ents {
				require.False(t, strings.HasPrefix(e.Name(), store.TmpPrefix), "scratch folder %s left", e.Name())
			}
			st, err := db.Stats(ctx)
			require.NoError(t, err)
			require.Zero(t, st.Documents, "nothing of the load is stored")
			q.setLimit(1 << 40)
			full.Store(false)
			require.NoError(t, db.Load(ctx, DocsOf(docs)))
			got, err := db.Get(ctx, 123)
			require.NoError(t, err)
			require.Equal(t, docs[122], got)
			_, err = db.Check(ctx)
			require.NoError(t, err)
			require.NoError(t, db.Close())
		})
	}
}
