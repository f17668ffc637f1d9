package wal

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type rec struct {
	typ     byte
	payload string
}

func replayAll(t *testing.T, dir string, from uint64) ([]rec, ReplayStats, error) {
	t.Helper()
	var got []rec
	st, err := Replay(dir, from, false, func(typ byte, p []byte) error {
		got = append(got, rec{typ, string(p)})
		return nil
	})
	return got, st, err
}

func writeRecs(t *testing.T, dir string, mode SyncMode, recs []rec) {
	t.Helper()
	l, err := Open(dir, Options{Sync: mode})
	require.NoError(t, err)
	for _, r := range recs {
		require.NoError(t, l.Write(context.Background(), r.typ, []byte(r.payload)))
	}
	require.NoError(t, l.Close())
}

func sample(n int) []rec {
	var recs []rec
	for i := range n {
		recs = append(recs, rec{byte(1 + i%3), fmt.Sprintf("record %d %s", i, string(make([]byte, i%17)))})
	}
	return recs
}

func TestRoundTrip(t *testing.T) {
	for _, mode := range []SyncMode{SyncAlways, SyncInterval, SyncNone} {
		t.Run(mode.String(), func(t *testing.T) {
			dir := t.TempDir()
			recs := sample(100)
			writeRecs(t, dir, mode, recs[:50])
			writeRecs(t, dir, mode, recs[50:]) // a second Open starts segment 2
			segs, err := Segments(dir)
			require.NoError(t, err)
			assert.Equal(t, []uint64{1, 2}, segs)
			got, st, err := replayAll(t, dir, 0)
			require.NoError(t, err)
			assert.Equal(t, recs, got)
			assert.Equal(t, ReplayStats{Segments: 2, Records: 100}, st)
			got, _, err = replayAll(t, dir, 2)
			require.NoError(t, err)
			assert.Equal(t, recs[50:], got)
		})
	}
}

func TestParseSyncMode(t *testing.T) {
	for _, m := range []SyncMode{SyncAlways, SyncInterval, SyncNone} {
		got, err := ParseSyncMode(m.String())
		require.NoError(t, err)
		assert.Equal(t, m, got)
	}
	_, err := ParseSyncMode("sometimes")
	assert.ErrorContains(t, err, `"sometimes"`)
}

func TestBadAppend(t *testing.T) {
	l, err := Open(t.TempDir(), Options{})
	require.NoError(t, err)
	_, err = l.Append(0, nil)
	assert.Error(t, err)
	_, err = l.Append(1, make([]byte, MaxRecord+1))
	assert.ErrorIs(t, err, ErrTooLarge)
	require.NoError(t, l.Close())
	_, err = l.Append(1, nil)
	assert.ErrorIs(t, err, ErrClosed)
	assert.ErrorIs(t, l.Close(), ErrClosed)
}

// TestGroupCommit runs many writers at once; every acknowledged record must
// be replayed, and the writers must have shared fsyncs.
func TestGroupCommit(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{Sync: SyncAlways})
	require.NoError(t, err)
	const writers, each = 16, 50
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				assert.NoError(t, l.Write(context.Background(), 1, fmt.Appendf(nil, "%d/%d", w, i)))
			}
		}()
	}
	wg.Wait()
	require.NoError(t, l.Close())
	got, _, err := replayAll(t, dir, 0)
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, r := range got {
		seen[r.payload] = true
	}
	assert.Len(t, seen, writers*each)
}

func TestRotateAndRemove(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{})
	require.NoError(t, err)
	ctx := context.Background()
	require.NoError(t, l.Write(ctx, 1, []byte("a")))
	seg, err := l.Rotate()
	require.NoError(t, err)
	assert.Equal(t, uint64(2), seg)
	assert.Equal(t, seg, l.Segment())
	require.NoError(t, l.Write(ctx, 1, []byte("b")))
	before := l.Size()
	require.NoError(t, l.RemoveBefore(seg))
	assert.Equal(t, before-int64(HeaderLen+1), l.Size())
	require.NoError(t, l.Close())
	got, _, err := replayAll(t, dir, 0)
	require.NoError(t, err)
	assert.Equal(t, []rec{{1, "b"}}, got)
}

// TestTornTail cuts the last segment at every offset inside its last record
// and damages that record's bytes: replay returns the records before it and
// trims the file, never an error.
func TestTornTail(t *testing.T) {
	recs := sample(5)
	full := t.TempDir()
	writeRecs(t, full, SyncNone, recs)
	path := filepath.Join(full, SegmentName(1))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	lastStart := len(data) - HeaderLen - len(recs[4].payload)
	cases := map[string][]byte{}
	for cut := lastStart; cut < len(data); cut++ {
		cases[fmt.Sprintf("cut at %d", cut)] = data[:cut]
	}
	for i := lastStart; i < len(data); i++ {
		d := append([]byte(nil), data...)
		d[i] ^= 0x40
		cases[fmt.Sprintf("flip at %d", i)] = d
	}
	cases["zeros after"] = append(append([]byte(nil), data[:lastStart]...), make([]byte, 4096)...)
	for name, d := range cases {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, SegmentName(1)), d, 0o644))
			got, st, err := replayAll(t, dir, 0)
			require.NoError(t, err)
			assert.Equal(t, recs[:4], got)
			assert.Equal(t, int64(len(d)-lastStart), st.Trimmed)
			after, err := os.ReadFile(filepath.Join(dir, SegmentName(1)))
			require.NoError(t, err)
			assert.Equal(t, data[:lastStart], after, "trimmed to the last whole record")
		})
	}
}

// TestCorruptMiddle damages a record that valid records follow: replay must
// report the segment and offset, not silently drop acknowledged writes.
func TestCorruptMiddle(t *testing.T) {
	recs := sample(5)
	dir := t.TempDir()
	writeRecs(t, dir, SyncNone, recs)
	path := filepath.Join(dir, SegmentName(1))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	off := 0
	for _, r := range recs[:2] {
		off += HeaderLen + len(r.payload)
	}
	for _, i := range []int{off, off + 4, off + 6, off + HeaderLen + 1} { // length, type, checksum, payload
		d := append([]byte(nil), data...)
		d[i] ^= 0x01
		require.NoError(t, os.WriteFile(path, d, 0o644))
		got, _, err := replayAll(t, dir, 0)
		var ce *CorruptError
		require.ErrorAs(t, err, &ce, "damage at byte %d", i)
		assert.True(t, errors.Is(err, ErrCorrupt))
		assert.Equal(t, int64(off), ce.Offset)
		assert.Equal(t, path, ce.Path)
		assert.Contains(t, err.Error(), SegmentName(1))
		assert.Equal(t, recs[:2], got, "records before the damage are replayed")
		after, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, d, after, "a corrupt segment is left as it is")
	}
}

func TestReplayRejectedRecord(t *testing.T) {
	dir := t.TempDir()
	writeRecs(t, dir, SyncNone, sample(3))
	_, err := Replay(dir, 0, false, func(typ byte, p []byte) error {
		if typ == 2 {
			return errors.New("bad op")
		}
		return nil
	})
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Reason, "bad op")
}

func FuzzScan(f *testing.F) {
	f.Add(AppendRecord(AppendRecord(nil, 1, []byte("hello")), 2, nil))
	f.Add([]byte{})
	f.Add([]byte{5, 0, 0, 0, 1, 0, 0, 0, 0, 'a'})
	f.Fuzz(func(t *testing.T, data []byte) {
		var total int
		n, good, err := scan("fuzz", data, func(typ byte, p []byte) error {
			total += HeaderLen + len(p)
			if typ == 0 {
				t.Fatal("type 0 delivered")
			}
			return nil
		})
		if good > int64(len(data)) || int64(total) != good {
			t.Fatalf("valid prefix %d of %d, delivered %d bytes in %d records", good, len(data), total, n)
		}
		if err == nil && good < int64(len(data)) && !tornTail(data[good:]) {
			t.Fatal("undetected damage")
		}
	})
}
