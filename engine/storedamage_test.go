package engine

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/sstable/block"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/wal"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// grownIndex makes an index by online inserts and several flushes, so that
// its MANIFEST holds many edits and its log has moved past old segments.
func grownIndex(t *testing.T, dir string, flushes, snapshotAfter int, snap string) int {
	t.Helper()
	db := openT(t, dir, testOptions())
	r := rand.New(rand.NewPCG(3, 3))
	n := 0
	for f := range flushes {
		var batch []Doc
		for range 300 {
			batch = append(batch, Doc{ID: uint64(n), Fingerprint: r.Uint64()})
			n++
		}
		require.NoError(t, db.InsertBatch(ctx, batch))
		require.NoError(t, db.Flush(ctx))
		if f == snapshotAfter && snap != "" {
			require.NoError(t, db.Close())
			copyDir(t, filepath.Join(dir, store.Dir), snap)
			db = openT(t, dir, testOptions())
		}
	}
	require.NoError(t, db.Close())
	return n
}

// grownManifest is grownIndex of 3 flushes in a new folder, with the
// name and bytes of its store's MANIFEST.
func grownManifest(t *testing.T) (dir string, n int, manifest string, orig []byte) {
	t.Helper()
	dir = t.TempDir()
	n = grownIndex(t, dir, 3, -1, "")
	desc, err := pebble.Peek(filepath.Join(dir, store.Dir), vfs.Default)
	require.NoError(t, err)
	orig, err = os.ReadFile(desc.ManifestFilename)
	require.NoError(t, err)
	return dir, n, filepath.Base(desc.ManifestFilename), orig
}

// copyIndex copies the index in dir (its store and log) to a new folder.
func copyIndex(t *testing.T, dir string) string {
	t.Helper()
	work := t.TempDir()
	copyDir(t, filepath.Join(dir, store.Dir), filepath.Join(work, store.Dir))
	copyDir(t, filepath.Join(dir, walDir), filepath.Join(work, walDir))
	return work
}

func copyDir(t *testing.T, from, to string) {
	t.Helper()
	require.NoError(t, os.MkdirAll(to, 0o755))
	ents, err := os.ReadDir(from)
	require.NoError(t, err)
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join(from, e.Name()))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(to, e.Name()), b, 0o644))
	}
}

// TestRolledBackStore: the Pebble store put back to an older version (what
// a MANIFEST read only up to a damaged record does) while the log has moved
// on. The log no longer has the segment the old version replays from, and
// the open is refused, naming both, before anything is deleted.
func TestRolledBackStore(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	old := filepath.Join(t.TempDir(), "old")
	grownIndex(t, dir, 8, 1, old)
	pdir := filepath.Join(dir, store.Dir)
	require.NoError(t, os.RemoveAll(pdir))
	copyDir(t, old, pdir)
	_, err := Open(dir, Options{})
	require.ErrorIs(t, err, ErrCorrupt)
	assert.Contains(t, err.Error(), "missing")
	assert.Contains(t, err.Error(), ".wal")
	_, err = Open(dir, Options{ReadOnly: true})
	require.ErrorIs(t, err, ErrCorrupt, "read-only too")
}

// TestManifestFlips flips bytes across the middle of the store's MANIFEST
// of an index whose last flushes only added sstables (so that the version
// before them opens): each flip either keeps every document or is refused;
// none opens an index that lost documents.
func TestManifestFlips(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("opens an index per flip")
	}
	dir, n, manifest, orig := grownManifest(t)
	r := rand.New(rand.NewPCG(5, 5))
	refused, whole := 0, 0
	for range 40 {
		at := len(orig)/8 + r.IntN(len(orig)*3/4)
		work := copyIndex(t, dir)
		m := filepath.Join(work, store.Dir, manifest)
		b := append([]byte(nil), orig...)
		b[at] ^= 1 << r.IntN(8)
		require.NoError(t, os.WriteFile(m, b, 0o644))
		db, err := Open(work, Options{})
		if err != nil {
			require.ErrorIs(t, err, ErrCorrupt, "a refusal says the index is damaged")
			assert.NotContains(t, err.Error(), "not a simhashdb index")
			refused++
			continue
		}
		st, err := db.Stats(ctx)
		require.NoError(t, err)
		_, cerr := db.Check(ctx)
		require.NoError(t, db.Close())
		require.Equal(t, int64(n), st.Documents, "flip at %d of %d opened an index that lost documents", at, len(orig))
		require.NoError(t, cerr)
		whole++
	}
	t.Logf("%d flips refused, %d harmless", refused, whole)
	assert.Positive(t, refused)
}

// TestManifestCuts cuts the store's MANIFEST short at points across it
// (the damage a truncated copy or a lost tail gives, which Pebble reads as
// a crash's torn write and opens the version before): the engine's log no
// longer covers that version, so each cut is refused, with every file
// left as it was, or keeps every document; none opens an index that lost
// documents.
func TestManifestCuts(t *testing.T) {
	t.Parallel()
	dir, n, manifest, orig := grownManifest(t)
	refused := 0
	for cut := len(orig) - 1; cut > 0; cut -= max(len(orig)/24, 1) {
		work := copyIndex(t, dir)
		require.NoError(t, os.Truncate(filepath.Join(work, store.Dir, manifest), int64(cut)))
		files := filesOf(t, work)
		// Writable first: a refusal must leave every file as it was,
		// the sstables the cut MANIFEST no longer lists included.
		for _, ro := range []bool{false, true} {
			db, err := Open(work, Options{ReadOnly: ro})
			if err != nil {
				require.ErrorIs(t, err, ErrCorrupt, "cut at %d of %d: a refusal says the index is damaged", cut, len(orig))
				require.Equal(t, files, filesOf(t, work), "cut at %d: a refused open changed the index's files", cut)
				refused++
				continue
			}
			st, err := db.Stats(ctx)
			require.NoError(t, err)
			require.NoError(t, db.Close())
			require.Equal(t, int64(n), st.Documents, "cut at %d of %d (read-only %v) opened an index that lost documents", cut, len(orig), ro)
		}
	}
	assert.Positive(t, refused)
}

// filesOf maps every file under dir to its size.
func filesOf(t *testing.T, dir string) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	require.NoError(t, filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[path] = info.Size()
		return nil
	}))
	return out
}

// TestSSTableFlips flips a byte in every stretch of an sstable, the filter
// block included: Check reads every block, so each flip is found by Check
// or refused at open, never passed as sound.
func TestSSTableFlips(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	require.NoError(t, db.Load(ctx, DocsOf(corpus(3000, 4))))
	require.NoError(t, db.Close())
	ssts, err := filepath.Glob(filepath.Join(dir, store.Dir, "*.sst"))
	require.NoError(t, err)
	sort.Slice(ssts, func(i, j int) bool { return size(t, ssts[i]) > size(t, ssts[j]) })
	orig, err := os.ReadFile(ssts[0])
	require.NoError(t, err)
	found := 0
	for i := range 24 {
		at := i * (len(orig) - 1) / 23
		b := append([]byte(nil), orig...)
		b[at] ^= 0x20
		require.NoError(t, os.WriteFile(ssts[0], b, 0o644))
		db, err := Open(dir, Options{})
		if err == nil {
			_, err = db.Check(ctx)
			db.Close()
		}
		require.Error(t, err, "flip at %d of %d passed", at, len(orig))
		found++
	}
	require.NoError(t, os.WriteFile(ssts[0], orig, 0o644))
	db = openT(t, dir, Options{})
	_, err = db.Check(ctx)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	assert.Equal(t, 24, found)
}

// TestMissingManifestMarker: a store whose marker of the current MANIFEST
// was removed is a damaged index, not a foreign folder; the marker the
// message describes opens it again.
func TestMissingManifestMarker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	require.NoError(t, db.Load(ctx, DocsOf(corpus(300, 4))))
	require.NoError(t, db.Close())
	markers, err := filepath.Glob(filepath.Join(dir, store.Dir, "marker.manifest.*"))
	require.NoError(t, err)
	require.Len(t, markers, 1)
	require.NoError(t, os.Remove(markers[0]))
	_, err = Open(dir, Options{})
	require.ErrorIs(t, err, ErrCorrupt)
	assert.NotErrorIs(t, err, ErrNotIndex)
	assert.Contains(t, err.Error(), "marker was removed")
	name := regexp.MustCompile(`marker\.manifest\.000001\.MANIFEST-\d+`).FindString(err.Error())
	require.NotEmpty(t, name, err.Error())
	require.NoError(t, os.WriteFile(filepath.Join(dir, store.Dir, name), nil, 0o644))
	db = openT(t, dir, Options{})
	defer db.Close()
	_, err = db.Check(ctx)
	require.NoError(t, err)
}

// TestStraySSTable: an sstable in the store's folder that its MANIFEST
// does not list is reported by Check, and a writable open deletes it.
func TestStraySSTable(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	require.NoError(t, db.Load(ctx, DocsOf(corpus(500, 4))))
	require.NoError(t, db.Close())
	ssts, err := filepath.Glob(filepath.Join(dir, store.Dir, "*.sst"))
	require.NoError(t, err)
	b, err := os.ReadFile(ssts[0])
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, store.Dir, "999999.sst"), b, 0o644))
	db = openT(t, dir, Options{ReadOnly: true})
	rep, err := db.Check(ctx)
	require.NoError(t, err)
	assert.Equal(t, []string{filepath.Join(dir, store.Dir, "999999.sst")}, rep.Unlisted)
	require.NoError(t, db.Close())
}

func size(t *testing.T, path string) int64 {
	st, err := os.Stat(path)
	require.NoError(t, err)
	return st.Size()
}

// TestLogLengthFlips flips each bit of the length field of the last record
// of an index's log (written, acknowledged, not yet flushed): the record's
// documents are lost with it, and the open says so (a warning, the bytes
// kept in quarantine, Check failing) or refuses; it is never taken for a
// torn write, silently.
func TestLogLengthFlips(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openT(t, dir, Options{SizeHint: 1 << 12, MemtableSize: 1 << 30, Sync: SyncAlways})
	for i := range 20 {
		require.NoError(t, db.Insert(ctx, Doc{ID: uint64(i), Fingerprint: uint64(i) * 0x9e3779b97f4a7c15}))
	}
	last := Doc{ID: 99, Fingerprint: 42, Name: "the last acknowledged write"}
	require.NoError(t, db.Insert(ctx, last))
	crash := t.TempDir()
	copyDir(t, filepath.Join(dir, store.Dir), filepath.Join(crash, store.Dir))
	copyDir(t, filepath.Join(dir, walDir), filepath.Join(crash, walDir))
	require.NoError(t, db.Close())
	segs, err := filepath.Glob(filepath.Join(crash, walDir, "*.wal"))
	require.NoError(t, err)
	seg := segs[len(segs)-1]
	data, err := os.ReadFile(seg)
	require.NoError(t, err)
	lastLen := len(encodeCommit([]Doc{last}, nil)[0])
	at := len(data) - lastLen - 13 // the last frame's header (wal.HeaderLen)
	silent, told := 0, 0
	for bit := range 32 {
		work := t.TempDir()
		copyDir(t, filepath.Join(crash, store.Dir), filepath.Join(work, store.Dir))
		copyDir(t, filepath.Join(crash, walDir), filepath.Join(work, walDir))
		b := append([]byte(nil), data...)
		b[at+bit/8] ^= 1 << (bit % 8)
		require.NoError(t, os.WriteFile(filepath.Join(work, walDir, filepath.Base(seg)), b, 0o644))
		db, err := Open(work, Options{})
		if err != nil {
			told++
			continue
		}
		_, gerr := db.Get(ctx, last.ID)
		_, cerr := db.Check(ctx)
		require.NoError(t, db.Close())
		switch {
		case gerr == nil:
			t.Fatalf("bit %d: the damaged record was applied", bit)
		case cerr != nil:
			told++
		default:
			silent++
		}
	}
	t.Logf("32 flips of the last record's length: %d reported, %d silent", told, silent)
	assert.Zero(t, silent)
}

// TestMissingLogSegment: a log segment removed by hand, the newest one or
// one between others, is refused by name at open, read-only open and
// Check, before a writable open could make the loss permanent; a
// point-in-time open keeps what comes before it and says what it lost.
func TestMissingLogSegment(t *testing.T) {
	t.Parallel()
	for _, remove := range []int{2, 1} { // of three segments holding records: the newest, the middle one
		t.Run(fmt.Sprintf("segment %d of 0-2", remove), func(t *testing.T) {
			dir := t.TempDir()
			for s := range 3 {
				db := openT(t, dir, testOptions())
				for i := range 10 {
					require.NoError(t, db.Insert(ctx, Doc{ID: uint64(10*s + i), Fingerprint: uint64(10*s+i) * 0x9e3779b97f4a7c15}))
				}
				require.NoError(t, db.Close())
			}
			var full []string
			segs, err := filepath.Glob(filepath.Join(dir, walDir, "*.wal"))
			require.NoError(t, err)
			for _, s := range segs {
				if st, _ := os.Stat(s); st.Size() > 0 {
					full = append(full, s)
				}
			}
			require.Len(t, full, 3)
			gone := full[remove]
			require.NoError(t, os.Remove(gone))
			for _, o := range []Options{{}, {ReadOnly: true}} {
				_, err := Open(dir, o)
				require.ErrorIs(t, err, ErrCorrupt, "read-only %v", o.ReadOnly)
				assert.Contains(t, err.Error(), filepath.Base(gone))
				assert.Contains(t, err.Error(), "missing")
			}
			db := openT(t, dir, Options{WALRecovery: wal.RecoverPointInTime})
			defer db.Close()
			n := 0
			for _, err := range db.Docs(ctx) {
				require.NoError(t, err)
				n++
			}
			require.Equal(t, 10*remove, n, "the documents before the missing segment")
			rep, err := db.Check(ctx)
			require.ErrorIs(t, err, ErrCorrupt, "the loss stays reported: %v", rep)
			require.NoError(t, db.Close())
			db = openT(t, dir, Options{}) // the log is whole again: tail recovery opens it
			require.NoError(t, db.Close())
		})
	}
}

// TestValueBlockFlips: values that Pebble keeps apart from their keys
// (older versions, kept for a snapshot, in value blocks) are read and
// checked by Check too, which Pebble's own block validation skips: a flip
// in any value block is found.
func TestValueBlockFlips(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	rewrite := func(round int) {
		docs := make([]Doc, 2000)
		for i := range docs {
			docs[i] = Doc{ID: uint64(i), Fingerprint: uint64(i*7919+round) * 0x9e3779b97f4a7c15, Name: fmt.Sprintf("name-%d-%d", i, round)}
		}
		require.NoError(t, db.InsertBatch(ctx, docs))
		require.NoError(t, db.Flush(ctx))
	}
	// Rewrites of the same documents, compacted while the engine's
	// snapshot holds the old ones: Pebble keeps those in value blocks. How
	// soon a compaction makes one, and whether a later one keeps it until
	// the index closes, is Pebble's affair: rewrite until a closed index
	// has one.
	var ssts []string
	blocks := map[string][]block.Handle{}
	for round, found := 0, 0; found == 0; {
		for ; !hasValueBlocks(t, db); round++ {
			if round == 300 {
				// Seen under the race detector, whose slowness changes when
				// Pebble compacts; without it a few rewrites make one.
				require.NoError(t, db.Close())
				t.Skip("Pebble made no value block in 300 rewrites: nothing to flip")
			}
			rewrite(round)
		}
		require.NoError(t, db.Close())
		var err error
		ssts, err = filepath.Glob(filepath.Join(dir, store.Dir, "*.sst"))
		require.NoError(t, err)
		ro := openT(t, dir, Options{ReadOnly: true})
		for _, path := range ssts {
			blocks[path] = valueBlocks(t, ro, path)
			found += len(blocks[path])
		}
		require.NoError(t, ro.Close())
		if found == 0 {
			db = openT(t, dir, testOptions())
		}
	}
	flipped := 0
	for _, path := range ssts {
		blocks := blocks[path]
		orig, err := os.ReadFile(path)
		require.NoError(t, err)
		for _, bh := range blocks {
			b := slices.Clone(orig)
			b[bh.Offset+bh.Length/2] ^= 0x20
			require.NoError(t, os.WriteFile(path, b, 0o644))
			db, err := Open(dir, Options{ReadOnly: true})
			if err == nil {
				_, err = db.Check(ctx)
				db.Close()
			}
			require.ErrorIs(t, err, ErrCorrupt, "flip in the value block at %d of %s", bh.Offset, path)
			assert.Contains(t, err.Error(), "value block")
			flipped++
		}
		require.NoError(t, os.WriteFile(path, orig, 0o644))
	}
	require.Positive(t, flipped, "the index has value blocks to flip")
}

// hasValueBlocks reports whether a live sstable of db has value blocks.
func hasValueBlocks(t *testing.T, db *DB) bool {
	ssts, err := filepath.Glob(filepath.Join(db.dir, store.Dir, "*.sst"))
	require.NoError(t, err)
	for _, path := range ssts {
		if bs, err := sstValueBlocks(db, path); err == nil && len(bs) > 0 {
			return true
		} // else compacted away meanwhile, or none
	}
	return false
}

// valueBlocks lists the value blocks of the sstable at path.
func valueBlocks(t *testing.T, db *DB, path string) []block.Handle {
	bs, err := sstValueBlocks(db, path)
	require.NoError(t, err)
	return bs
}

// sstValueBlocks reads the value blocks' handles of the sstable at path.
func sstValueBlocks(db *DB, path string) ([]block.Handle, error) {
	f, err := vfs.Default.Open(path)
	if err != nil {
		return nil, err
	}
	rd, err := sstable.NewSimpleReadable(f)
	if err != nil {
		f.Close()
		return nil, err
	}
	r, err := sstable.NewReader(ctx, rd, db.store.ReaderOptions())
	if err != nil {
		rd.Close()
		return nil, err
	}
	defer r.Close()
	l, err := r.Layout()
	if err != nil {
		return nil, err
	}
	return l.ValueBlock, nil
}
