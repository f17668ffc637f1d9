package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/stretchr/testify/require"
)

// openAt opens the store of the index folder dir.
func openAt(t *testing.T, dir string, readOnly bool) (*Store, error) {
	t.Helper()
	return Open(dir, Options{FS: vfs.Default, ReadOnly: readOnly, Logger: slog.New(slog.DiscardHandler), CacheSize: 1 << 20, NewOrder: KeyOrder})
}

// commitKeys commits key=value for each of kv, in one batch.
func commitKeys(t *testing.T, s *Store, kv ...string) {
	t.Helper()
	b := s.NewBatch()
	defer b.Close()
	for i := 0; i < len(kv); i += 2 {
		require.NoError(t, b.Set([]byte(kv[i]), []byte(kv[i+1])))
	}
	require.NoError(t, s.Commit(context.Background(), s.BatchWrites(b)))
}

// scanAll returns r's keys and values with the prefix p, as "k=v".
func scanAll(t *testing.T, r Reader, p string) []string {
	t.Helper()
	var out []string
	require.NoError(t, Scan(r, []byte(p), func(k, v []byte) error {
		out = append(out, string(k)+"="+string(v))
		return nil
	}))
	return out
}

// TestSnapshot checks what reads see: a snapshot the store as it was when
// taken, the store itself every commit, Scan a prefix in order and no
// more, Get a missing key as ErrKeyNotFound, and an iterator its bounds.
func TestSnapshot(t *testing.T) {
	s, err := openAt(t, t.TempDir(), false)
	require.NoError(t, err)
	defer s.Close()
	commitKeys(t, s, "\x01b", "2", "\x01a", "1", "\x02a", "x")
	snap := s.NewSnapshot()
	commitKeys(t, s, "\x01c", "3", "\x01a", "one")

	require.Equal(t, []string{"\x01a=1", "\x01b=2"}, scanAll(t, snap, "\x01"))
	require.Equal(t, []string{"\x01a=one", "\x01b=2", "\x01c=3"}, scanAll(t, s, "\x01"))
	_, _, err = snap.Get([]byte("\x01c"))
	require.ErrorIs(t, err, ErrKeyNotFound)
	v, c, err := s.Get([]byte("\x01c"))
	require.NoError(t, err)
	require.Equal(t, "3", string(v))
	require.NoError(t, c.Close())

	it, err := s.NewIter(IterOptions{Lower: []byte("\x01b"), Upper: []byte("\x02")})
	require.NoError(t, err)
	var keys []string
	for it.First(); it.Valid(); it.Next() {
		keys = append(keys, string(it.Key()))
	}
	require.Equal(t, []string{"\x01b", "\x01c"}, keys)
	require.True(t, it.Last())
	require.Equal(t, "\x01c", string(it.Key()))
	require.True(t, it.Prev())
	require.True(t, it.SeekGE([]byte("\x01bb")))
	require.Equal(t, "\x01c", string(it.Key()))
	val, err := it.Value()
	require.NoError(t, err)
	require.Equal(t, "3", string(val))
	require.False(t, it.SeekGE([]byte("\x01d")), "past the upper bound's keys")
	require.NoError(t, it.Error())
	require.NoError(t, it.Close())
	require.NoError(t, snap.Close())
}

// TestLoad checks a bulk load: nothing of it readable before Ingest, all
// of it after, its scratch folder gone on Close, and a scratch folder a
// crash left removed by RemoveScratch.
func TestLoad(t *testing.T) {
	dir := t.TempDir()
	s, err := openAt(t, dir, false)
	require.NoError(t, err)
	defer s.Close()
	l, err := s.NewLoad(1 << 10)
	require.NoError(t, err)
	for f, keys := range [][]string{{"\x01a", "\x01b"}, {"\x02a"}} {
		w, err := l.Create(fmt.Sprint("part-", f))
		require.NoError(t, err)
		for _, k := range keys {
			require.NoError(t, w.Set([]byte(k), []byte("v"+k[1:])))
		}
		require.NoError(t, w.Close())
	}
	require.Empty(t, scanAll(t, s, "\x01"), "nothing before Ingest")
	require.NoError(t, l.Ingest(context.Background()))
	require.Equal(t, []string{"\x01a=va", "\x01b=vb"}, scanAll(t, s, "\x01"))
	require.Equal(t, []string{"\x02a=va"}, scanAll(t, s, "\x02"))
	require.NoError(t, l.Close())
	require.Empty(t, scratch(t, dir), "the load's scratch folder removed")

	left, err := MkdirTemp(vfs.Default, dir, TmpPrefix)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(left, "half.sst"), []byte("x"), 0o644))
	require.NoError(t, s.RemoveScratch())
	require.Empty(t, scratch(t, dir))
}

// scratch lists the scratch folders in dir.
func scratch(t *testing.T, dir string) []string {
	names, err := os.ReadDir(dir)
	require.NoError(t, err)
	var out []string
	for _, n := range names {
		if strings.HasPrefix(n.Name(), TmpPrefix) {
			out = append(out, n.Name())
		}
	}
	return out
}

// TestCheckFiles checks that CheckFiles finds a flipped byte in an
// sstable's data block and names the file, returns an sstable the
// MANIFEST does not list, and finds nothing in a sound store.
func TestCheckFiles(t *testing.T) {
	dir := t.TempDir()
	s, err := openAt(t, dir, false)
	require.NoError(t, err)
	var kv []string
	for i := range 2000 {
		kv = append(kv, fmt.Sprintf("\x01%06d", i), strings.Repeat("v", 40))
	}
	commitKeys(t, s, kv...)
	check := func(s *Store) (bad []error, unlisted []string) {
		unlisted, err := s.CheckFiles(context.Background(), func(err error) { bad = append(bad, err) })
		require.NoError(t, err)
		return bad, unlisted
	}
	bad, unlisted := check(s)
	require.Empty(t, bad)
	require.Empty(t, unlisted)
	require.NoError(t, s.Close())

	ssts, err := filepath.Glob(filepath.Join(dir, Dir, "*.sst"))
	require.NoError(t, err)
	require.Len(t, ssts, 1)
	data, err := os.ReadFile(ssts[0])
	require.NoError(t, err)
	at := bytes.Index(data, []byte(strings.Repeat("v", 40))) // in the first data block
	require.Positive(t, at)
	data[at] ^= 0x10
	require.NoError(t, os.WriteFile(ssts[0], data, 0o644))
	stray := filepath.Join(dir, Dir, "999999.sst")
	require.NoError(t, os.WriteFile(stray, []byte("not listed"), 0o644))

	s, err = openAt(t, dir, true)
	require.NoError(t, err)
	defer s.Close()
	bad, unlisted = check(s)
	require.Len(t, bad, 1)
	require.True(t, IsCorruption(bad[0]) || errors.Is(bad[0], format.ErrCorrupt), "%v", bad[0])
	require.Contains(t, bad[0].Error(), filepath.Base(ssts[0]))
	require.Equal(t, []string{"999999.sst"}, baseNames(unlisted))
}

func baseNames(paths []string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		out[i] = filepath.Base(p)
	}
	return out
}

// TestOpenRefuses checks the stores Open refuses, each with the error a
// caller matches: one another open holds (ErrLocked), a folder of other
// files (ErrNotIndex), Pebble's files without the marker naming the
// current MANIFEST (damage); and one it does not: a MANIFEST cut short.
func TestOpenRefuses(t *testing.T) {
	made := func(t *testing.T) string {
		dir := t.TempDir()
		s, err := openAt(t, dir, false)
		require.NoError(t, err)
		commitKeys(t, s, "\x01a", "1")
		require.NoError(t, s.Close())
		return dir
	}
	t.Run("locked", func(t *testing.T) {
		dir := made(t)
		s, err := openAt(t, dir, false)
		require.NoError(t, err)
		defer s.Close()
		_, err = openAt(t, dir, false)
		require.ErrorIs(t, err, ErrLocked)
	})
	t.Run("foreign", func(t *testing.T) {
		dir := t.TempDir()
		require.NoError(t, os.MkdirAll(filepath.Join(dir, Dir), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, Dir, "notes.txt"), []byte("mine"), 0o644))
		_, err := openAt(t, dir, false)
		require.ErrorIs(t, err, ErrNotIndex)
		require.Contains(t, err.Error(), "notes.txt")
		_, err = os.Stat(filepath.Join(dir, Dir, "notes.txt"))
		require.NoError(t, err, "left as it is")
	})
	t.Run("marker removed", func(t *testing.T) {
		dir := made(t)
		markers, err := filepath.Glob(filepath.Join(dir, Dir, "marker.manifest.*"))
		require.NoError(t, err)
		require.Len(t, markers, 1)
		require.NoError(t, os.Remove(markers[0]))
		_, err = openAt(t, dir, false)
		require.ErrorIs(t, err, format.ErrCorrupt)
		require.Contains(t, err.Error(), "marker")
	})
	t.Run("manifest cut", func(t *testing.T) {
		// A MANIFEST cut short reads as a crash's torn tail: Pebble opens
		// the version before it, and the store does too. What refuses
		// it is the engine, whose log no longer covers that version
		// (engine TestManifestCuts).
		dir := t.TempDir()
		s, err := openAt(t, dir, false)
		require.NoError(t, err)
		commitKeys(t, s, "\x01a", "1")
		commitKeys(t, s, "\x01b", "2")
		require.NoError(t, s.Close())
		manifests, err := filepath.Glob(filepath.Join(dir, Dir, "MANIFEST-*"))
		require.NoError(t, err)
		m := manifests[len(manifests)-1]
		fi, err := os.Stat(m)
		require.NoError(t, err)
		require.NoError(t, os.Truncate(m, fi.Size()-1))
		s, err = openAt(t, dir, true)
		require.NoError(t, err)
		defer s.Close()
		require.Equal(t, []string{"\x01a=1"}, scanAll(t, s, "\x01"), "the version before the last commit")
	})
}

// TestCacheShare checks that the share of Pebble's cache moves within
// CacheMax and that a reservation holds room until released.
func TestCacheShare(t *testing.T) {
	s, err := Open(t.TempDir(), Options{FS: vfs.Default, Logger: slog.New(slog.DiscardHandler), CacheSize: 1 << 20, CacheMax: 4 << 20})
	require.NoError(t, err)
	defer s.Close()
	require.Equal(t, int64(1<<20), s.CacheShare())
	s.SetCacheShare(3 << 20)
	require.Equal(t, int64(3<<20), s.CacheShare())
	s.SetCacheShare(64 << 20)
	require.Equal(t, int64(4<<20), s.CacheShare(), "at most CacheMax")
	release := s.ReserveCache(1 << 20)
	release()
	_, misses, _ := s.CacheStats()
	require.GreaterOrEqual(t, misses, int64(0))
}
