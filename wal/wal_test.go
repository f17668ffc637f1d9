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
	return replayWith(t, dir, from, ReplayOptions{})
}

func replayWith(t *testing.T, dir string, from uint64, o ReplayOptions) ([]rec, ReplayStats, error) {
	t.Helper()
	var got []rec
	st, err := Replay(dir, Position{Segment: from}, o, func(_ Position, typ byte, p []byte) error {
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

// TestTornTail cuts the last segment at every offset inside its last
// record, or leaves zeros after it: replay returns the records before it,
// counts the torn bytes and leaves the file as it is, in every mode.
func TestTornTail(t *testing.T) {
	recs := sample(5)
	data, lastStart := segmentOf(t, recs)
	cases := map[string][]byte{}
	for cut := lastStart; cut < len(data); cut++ {
		cases[fmt.Sprintf("cut at %d", cut)] = data[:cut]
	}
	cases["zeros after"] = append(append([]byte(nil), data[:lastStart]...), make([]byte, 4096)...)
	for name, d := range cases {
		for _, mode := range []Recovery{RecoverTail, RecoverStrict, RecoverPointInTime} {
			t.Run(name+"/"+mode.String(), func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, SegmentName(1))
				require.NoError(t, os.WriteFile(path, d, 0o644))
				got, st, err := replayWith(t, dir, 0, ReplayOptions{Recovery: mode})
				require.NoError(t, err)
				assert.Equal(t, recs[:4], got)
				assert.Equal(t, int64(len(d)-lastStart), st.Torn)
				assert.Empty(t, st.Damage)
				after, err := os.ReadFile(path)
				require.NoError(t, err)
				assert.Equal(t, d, after, "a torn tail is left where it is")
			})
		}
	}
}

// segmentOf returns the segment that recs make, and where its last record
// starts.
func segmentOf(t *testing.T, recs []rec) ([]byte, int) {
	full := t.TempDir()
	writeRecs(t, full, SyncNone, recs)
	data, err := os.ReadFile(filepath.Join(full, SegmentName(1)))
	require.NoError(t, err)
	return data, len(data) - HeaderLen - len(recs[len(recs)-1].payload)
}

// TestDamagedTail flips every byte of the last record of a segment, which
// nothing follows. Never silent: either the flip made the frame look cut
// off (a length beyond the end of the file: a torn tail, counted), or the
// record is reported as damage, its bytes kept in a quarantine file and
// the segment trimmed; strict recovery refuses it instead.
func TestDamagedTail(t *testing.T) {
	recs := sample(5)
	data, lastStart := segmentOf(t, recs)
	torn, damaged := 0, 0
	for i := lastStart; i < len(data); i++ {
		d := append([]byte(nil), data...)
		d[i] ^= 0x40
		dir := t.TempDir()
		path := filepath.Join(dir, SegmentName(1))
		require.NoError(t, os.WriteFile(path, d, 0o644))
		_, _, err := replayWith(t, dir, 0, ReplayOptions{Recovery: RecoverStrict, ReadOnly: true})
		got, st, err2 := replayAll(t, dir, 0)
		require.NoError(t, err2)
		assert.Equal(t, recs[:4], got, "flip at %d", i)
		if st.Torn > 0 {
			torn++
			assert.Less(t, i, lastStart+4, "only a flip in the length can make a frame look cut off")
			require.NoError(t, err, "flip at %d: a torn tail passes strict recovery", i)
			assert.Equal(t, int64(len(d)-lastStart), st.Torn)
			assert.Empty(t, st.Damage)
			continue
		}
		damaged++
		require.ErrorIs(t, err, ErrCorrupt, "flip at %d: strict recovery refuses damage", i)
		require.Len(t, st.Damage, 1, "flip at %d", i)
		dm := st.Damage[0]
		assert.Equal(t, Position{1, int64(lastStart)}, dm.At)
		assert.Equal(t, int64(len(d)-lastStart), dm.Bytes)
		kept, err := os.ReadFile(dm.Quarantine)
		require.NoError(t, err)
		assert.Equal(t, d[lastStart:], kept, "the discarded bytes are kept")
		q, err := Quarantined(nil, dir)
		require.NoError(t, err)
		assert.Equal(t, []string{dm.Quarantine}, q)
		after, err := os.ReadFile(path)
		require.NoError(t, err)
		assert.Equal(t, data[:lastStart], after, "trimmed to the last whole record")
		_, st, err = replayAll(t, dir, 0)
		require.NoError(t, err)
		assert.Empty(t, st.Damage, "reported once")
	}
	t.Logf("%d flips looked like a torn tail, %d were reported as damage", torn, damaged)
	assert.Positive(t, damaged)
}

// TestPointInTime damages a record in the middle of the first of two
// segments: tail recovery refuses, point-in-time recovery replays what
// comes before and discards the rest of the log, reported.
func TestPointInTime(t *testing.T) {
	recs := sample(10)
	dir := t.TempDir()
	writeRecs(t, dir, SyncNone, recs[:5])
	writeRecs(t, dir, SyncNone, recs[5:])
	path := filepath.Join(dir, SegmentName(1))
	data, err := os.ReadFile(path)
	require.NoError(t, err)
	off := 2*HeaderLen + len(recs[0].payload) + len(recs[1].payload)
	data[off+HeaderLen] ^= 1
	require.NoError(t, os.WriteFile(path, data, 0o644))
	_, _, err = replayAll(t, dir, 0)
	require.ErrorIs(t, err, ErrCorrupt)
	got, st, err := replayWith(t, dir, 0, ReplayOptions{Recovery: RecoverPointInTime})
	require.NoError(t, err)
	assert.Equal(t, recs[:2], got)
	require.Len(t, st.Damage, 2)
	assert.Equal(t, Position{1, int64(off)}, st.Damage[0].At)
	assert.Equal(t, Position{2, 0}, st.Damage[1].At)
	got, st, err = replayAll(t, dir, 0)
	require.NoError(t, err, "the damage is gone from the log")
	assert.Equal(t, recs[:2], got)
	assert.Empty(t, st.Damage)
	q, err := Quarantined(nil, dir)
	require.NoError(t, err)
	assert.Len(t, q, 2)
}

func TestParseRecovery(t *testing.T) {
	for _, r := range []Recovery{RecoverTail, RecoverStrict, RecoverPointInTime} {
		got, err := ParseRecovery(r.String())
		require.NoError(t, err)
		assert.Equal(t, r, got)
	}
	_, err := ParseRecovery("lenient")
	require.ErrorContains(t, err, "lenient")
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
	for _, i := range []int{off, off + 1, off + 4, off + 6, off + HeaderLen + 1} { // length (one flip makes the frame look cut off), type, checksum, payload
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
	_, err := Replay(dir, Position{}, ReplayOptions{}, func(_ Position, typ byte, p []byte) error {
		if typ == 2 {
			return fmt.Errorf("%w: bad op", ErrCorrupt)
		}
		return nil
	})
	var ce *CorruptError
	require.ErrorAs(t, err, &ce)
	assert.Contains(t, ce.Reason, "bad op")
	// Other errors (the caller's own: a full disk) come back as they are.
	stop := errors.New("stop")
	_, err = Replay(dir, Position{}, ReplayOptions{}, func(Position, byte, []byte) error { return stop })
	require.Equal(t, stop, err)
}

func FuzzScan(f *testing.F) {
	f.Add(AppendRecord(AppendRecord(nil, 1, []byte("hello")), 2, nil))
	f.Add([]byte{})
	f.Add([]byte{5, 0, 0, 0, 1, 0, 0, 0, 0, 'a'})
	f.Fuzz(func(t *testing.T, data []byte) {
		var total int
		sc := segScan{seg: 1, path: "fuzz", data: data, fn: func(end Position, typ byte, p []byte) error {
			total += HeaderLen + len(p)
			if typ == 0 {
				t.Fatal("type 0 delivered")
			}
			if end.Offset != int64(total) {
				t.Fatalf("record ends at %d, reported %d", total, end.Offset)
			}
			return nil
		}}
		n, good, err := sc.scan(0)
		if good > int64(len(data)) || int64(total) != good {
			t.Fatalf("valid prefix %d of %d, delivered %d bytes in %d records", good, len(data), total, n)
		}
		if err != nil {
			t.Fatal(err)
		}
		if good < int64(len(data)) {
			if reason, _ := classify(data[good:]); reason == "" {
				t.Fatal("scan stopped before an intact record")
			}
		}
	})
}
