package wal

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/cockroachdb/pebble/v2/vfs"
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

// appendRecs writes recs with one write and one sync for all, as a group
// commit does: no sync note between them.
func appendRecs(t *testing.T, dir string, recs []rec) {
	t.Helper()
	l, err := Open(dir, Options{Sync: SyncAlways})
	require.NoError(t, err)
	for _, r := range recs {
		_, err := l.Append(r.typ, []byte(r.payload))
		require.NoError(t, err)
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
			segs, err := Segments(nil, dir)
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
// record, or leaves zeros after it: replay returns the records before it
// and counts the torn bytes in every mode; a read-only replay leaves the
// file as it is, a writable one trims the tail (so that it stays a tail
// when a later segment gets records).
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
			for _, ro := range []bool{true, false} {
				t.Run(fmt.Sprintf("%s/%s/read-only=%v", name, mode, ro), func(t *testing.T) {
					dir := t.TempDir()
					path := filepath.Join(dir, SegmentName(1))
					require.NoError(t, os.WriteFile(path, d, 0o644))
					got, st, err := replayWith(t, dir, 0, ReplayOptions{Recovery: mode, ReadOnly: ro})
					require.NoError(t, err)
					assert.Equal(t, recs[:4], got)
					assert.Equal(t, int64(len(d)-lastStart), st.Torn)
					assert.Empty(t, st.Damage)
					after, err := os.ReadFile(path)
					require.NoError(t, err)
					if ro {
						assert.Equal(t, d, after, "read-only: a torn tail is left where it is")
					} else {
						assert.Equal(t, d[:lastStart], after, "a torn tail is trimmed")
					}
				})
			}
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
// nothing follows. Never silent: the record is reported as damage, its
// bytes kept in a quarantine file and the segment trimmed; strict recovery
// refuses it instead. A flip of the length that makes the frame reach past
// the end of the file is caught by the header's checksum, not taken for a
// torn write.
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
	assert.Zero(t, torn, "no flip looks like a torn tail")
	assert.Equal(t, len(data)-lastStart, damaged)
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
	f.Add(appendV1(appendV1(nil, 1, []byte("hello")), 2, nil))
	f.Add(appendTear(AppendRecord(nil, 1, []byte("x")), Position{3, 17}))
	f.Add([]byte{})
	f.Add([]byte{5, 0, 0, 0, 1, 0, 0, 0, 0, 'a'})
	cut := AppendRecord(AppendRecord(nil, 1, bytes.Repeat([]byte("p"), 1200)), 2, []byte("after the hole"))
	clear(cut[sectorSize : 2*sectorSize]) // a power cut's sector of zeros
	f.Add(cut)
	// A damaged record with zeros in it and a sync note after it.
	noted := AppendRecord(nil, 1, append([]byte("one"), make([]byte, 1100)...))
	noted[HeaderLen] ^= 4
	f.Add(appendSynced(noted, int64(len(noted))))
	f.Fuzz(func(t *testing.T, data []byte) {
		var prev int64
		var total int
		sc := segScan{seg: 1, path: "fuzz", data: data, fn: func(end Position, typ byte, p []byte) error {
			total += len(p)
			if typ == 0 || typ > MaxType {
				t.Fatalf("type %d delivered", typ)
			}
			if n := end.Offset - prev; n != int64(HeaderLen+len(p)) && n < int64(headerLenV1+len(p)) {
				t.Fatalf("record of %d bytes ends %d bytes after the one before", len(p), n)
			}
			prev = end.Offset
			return nil
		}}
		n, good, err := sc.scan(0)
		if good > int64(len(data)) || good < prev || int64(total) > good {
			t.Fatalf("valid prefix %d of %d, delivered %d bytes in %d records", good, len(data), total, n)
		}
		if err != nil {
			t.Fatal(err)
		}
		if good < int64(len(data)) {
			if reason, _ := classify(data[good:]); reason == "" {
				t.Fatal("scan stopped before an intact record")
			}
			// A power cut's tear is decided on the bytes alone, for any
			// place in a segment.
			if cutByPower(data[good:], good) && intactAfter(data[good:]) > len(data) {
				t.Fatal("more intact records than bytes")
			}
		}
	})
}

// appendV1 appends a record in the frame logs had before v2.
func appendV1(dst []byte, typ byte, payload []byte) []byte {
	var h [headerLenV1]byte
	binary.LittleEndian.PutUint32(h[0:], uint32(len(payload)))
	h[4] = typ
	binary.LittleEndian.PutUint32(h[5:], crc32.Update(crc32.Checksum(h[:5], castagnoli), castagnoli, payload))
	return append(append(dst, h[:]...), payload...)
}

// TestV1Frames reads a segment written in the v1 frame, and one that mixes
// both, as a log upgraded in place has them.
func TestV1Frames(t *testing.T) {
	recs := sample(6)
	var old []byte
	for _, r := range recs[:3] {
		old = appendV1(old, r.typ, []byte(r.payload))
	}
	mixed := append([]byte(nil), old...)
	for _, r := range recs[3:] {
		mixed = AppendRecord(mixed, r.typ, []byte(r.payload))
	}
	for name, c := range map[string]struct {
		data []byte
		want []rec
	}{"v1": {old, recs[:3]}, "mixed": {mixed, recs}, "v1 torn": {append(old, appendV1(nil, 1, []byte("cut"))[:11]...), recs[:3]}} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			require.NoError(t, os.WriteFile(filepath.Join(dir, SegmentName(1)), c.data, 0o644))
			got, _, err := replayWith(t, dir, 0, ReplayOptions{Recovery: RecoverStrict, ReadOnly: true})
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
}

// TestTornTailNotLast: only the last segment that holds records can end in
// a torn write. A cut-off frame at the end of an earlier one, with records
// in the next, is damage: refused by tail recovery, discarded with the rest
// by point-in-time recovery. A segment that notes the cut (a log reopened
// after a failed write) makes it a torn tail again.
func TestTornTailNotLast(t *testing.T) {
	recs := sample(6)
	var seg1 []byte
	for _, r := range recs[:3] {
		seg1 = AppendRecord(seg1, r.typ, []byte(r.payload))
	}
	cut := int64(len(seg1))
	seg1 = append(seg1, AppendRecord(nil, 1, []byte("never acknowledged"))[:20]...)
	var seg2 []byte
	for _, r := range recs[3:] {
		seg2 = AppendRecord(seg2, r.typ, []byte(r.payload))
	}
	setup := func(t *testing.T, second []byte) string {
		dir := t.TempDir()
		require.NoError(t, os.WriteFile(filepath.Join(dir, SegmentName(1)), seg1, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, SegmentName(2)), second, 0o644))
		require.NoError(t, os.WriteFile(filepath.Join(dir, SegmentName(3)), nil, 0o644)) // opened, nothing written
		return dir
	}
	t.Run("tail", func(t *testing.T) {
		got, _, err := replayAll(t, setup(t, seg2), 0)
		var ce *CorruptError
		require.ErrorAs(t, err, &ce)
		assert.Equal(t, cut, ce.Offset)
		assert.Contains(t, ce.Reason, SegmentName(2))
		assert.Equal(t, recs[:3], got)
	})
	t.Run("point-in-time", func(t *testing.T) {
		got, st, err := replayWith(t, setup(t, seg2), 0, ReplayOptions{Recovery: RecoverPointInTime})
		require.NoError(t, err)
		assert.Equal(t, recs[:3], got)
		require.Len(t, st.Damage, 2)
	})
	t.Run("noted", func(t *testing.T) {
		dir := setup(t, append(appendTear(nil, Position{1, cut}), seg2...))
		got, st, err := replayWith(t, dir, 0, ReplayOptions{Recovery: RecoverStrict})
		require.NoError(t, err)
		assert.Equal(t, recs, got)
		assert.Equal(t, int64(20), st.Torn)
	})
	t.Run("noted elsewhere", func(t *testing.T) {
		dir := setup(t, append(appendTear(nil, Position{1, cut - 1}), seg2...))
		_, _, err := replayAll(t, dir, 0)
		require.NoError(t, err, "a note of an earlier cut: the complete records after it were written by the failed write")
		dir = setup(t, append(appendTear(nil, Position{1, cut + 1}), seg2...))
		_, _, err = replayAll(t, dir, 0)
		require.ErrorIs(t, err, ErrCorrupt, "a note of a later cut does not explain this one")
	})
}

// TestCutAt: a log opened after a write failed part way notes where the
// old segment's whole records end, and replay reads on past the cut.
func TestCutAt(t *testing.T) {
	dir := t.TempDir()
	l, err := Open(dir, Options{Sync: SyncNone})
	require.NoError(t, err)
	require.NoError(t, l.Write(context.Background(), 1, []byte("kept")))
	end := l.End()
	assert.Equal(t, Position{1, int64(HeaderLen + 4)}, end)
	require.NoError(t, l.Close())
	f, err := os.OpenFile(filepath.Join(dir, SegmentName(1)), os.O_APPEND|os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = f.Write(AppendRecord(nil, 1, []byte("the write that failed"))[:15])
	require.NoError(t, err)
	require.NoError(t, f.Close())
	l, err = Open(dir, Options{Sync: SyncNone, CutAt: end})
	require.NoError(t, err)
	require.NoError(t, l.Write(context.Background(), 2, []byte("after")))
	require.NoError(t, l.Close())
	got, st, err := replayWith(t, dir, 0, ReplayOptions{Recovery: RecoverStrict, ReadOnly: true})
	require.NoError(t, err)
	assert.Equal(t, []rec{{1, "kept"}, {2, "after"}}, got)
	assert.Equal(t, int64(15), st.Torn)
}

// TestReplayStart: a replay that must start in a segment the log no longer
// has (or past its end) is refused, naming both places: the records
// between are gone.
func TestReplayStart(t *testing.T) {
	dir := t.TempDir()
	writeRecs(t, dir, SyncNone, sample(2))
	writeRecs(t, dir, SyncNone, sample(2))
	writeRecs(t, dir, SyncNone, sample(2))
	require.NoError(t, os.Remove(filepath.Join(dir, SegmentName(1))))
	require.NoError(t, os.Remove(filepath.Join(dir, SegmentName(2))))
	for _, from := range []Position{{1, 0}, {2, 0}, {3, 100000}, {4, 0}} {
		_, err := Replay(dir, from, ReplayOptions{ReadOnly: true}, func(Position, byte, []byte) error { return nil })
		var ce *CorruptError
		require.ErrorAs(t, err, &ce, "from %v", from)
		assert.Contains(t, err.Error(), SegmentName(from.Segment))
	}
	_, err := Replay(dir, Position{3, 0}, ReplayOptions{ReadOnly: true}, func(Position, byte, []byte) error { return nil })
	require.NoError(t, err)
	_, err = Replay(t.TempDir(), Position{1, 0}, ReplayOptions{ReadOnly: true}, func(Position, byte, []byte) error { return nil })
	require.NoError(t, err, "a new log, not opened yet")
}

// TestPowerCutKeepsLog: records appended with SyncAlways to a log in a new
// folder survive a power cut that keeps only what was synced, the folder's
// own entry included.
func TestPowerCutKeepsLog(t *testing.T) {
	fs := vfs.NewCrashableMem()
	require.NoError(t, fs.MkdirAll("/index", 0o755))
	require.NoError(t, syncDir(fs, "/")) // the index's folder is durable; the log's is the log's to make so
	l, err := Open("/index/wal", Options{FS: fs, Sync: SyncAlways})
	require.NoError(t, err)
	lsn, err := l.Append(1, []byte("acknowledged"))
	require.NoError(t, err)
	require.NoError(t, l.Wait(context.Background(), lsn))
	cut := fs.CrashClone(vfs.CrashCloneCfg{})
	require.NoError(t, l.Close())
	var got []string
	_, err = Replay("/index/wal", Position{}, ReplayOptions{FS: cut}, func(_ Position, _ byte, p []byte) error {
		got = append(got, string(p))
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, []string{"acknowledged"}, got)
}

// TestPowerCutTear: a power cut that kept some sectors of the unsynced
// tail and not others (zeros) is a torn tail, even with intact records
// after the hole: they were written after the last sync, so none was
// acknowledged. The same place damaged by a bit flip is still damage.
func TestPowerCutTear(t *testing.T) {
	recs := make([]rec, 40)
	for i := range recs {
		recs[i] = rec{1, strings.Repeat(string(rune('a'+i%26)), 294)}
	}
	const size = HeaderLen + 294
	// startBefore returns the start of the first record that starts from 1
	// to far bytes before a sector boundary, and the boundary.
	startBefore := func(near, far int) (int, int) {
		for k := 3; ; k++ {
			if d := (sectorSize - k*size%sectorSize) % sectorSize; d >= near && d <= far {
				return k * size, k*size + d
			}
		}
	}
	for _, tc := range []struct {
		name   string
		damage func(b []byte)
	}{
		{"sector of zeros", func(b []byte) { clear(b[8*sectorSize : 9*sectorSize]) }},
		{"zeros from a record's start to a boundary", func(b []byte) {
			from, to := startBefore(5, sectorSize-1)
			clear(b[from:to])
		}},
		{"zeros in a length's low bytes up to a boundary", func(b []byte) {
			from, to := startBefore(1, 4)
			clear(b[from:to])
		}},
		{"bit flip", func(b []byte) { b[8*sectorSize+100] ^= 1 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			appendRecs(t, dir, recs) // the cut falls in their one write
			path := filepath.Join(dir, SegmentName(1))
			data, err := os.ReadFile(path)
			require.NoError(t, err)
			tc.damage(data)
			require.NoError(t, os.WriteFile(path, data, 0o644))
			got, st, err := replayAll(t, dir, 0)
			if tc.name == "bit flip" {
				require.ErrorIs(t, err, ErrCorrupt)
				return
			}
			require.NoError(t, err)
			require.Empty(t, st.Damage)
			require.Positive(t, st.Torn)
			require.Positive(t, st.Cut, "intact records after the hole")
			require.Equal(t, recs[:len(got)], got, "the records before the hole, in order")
			require.Less(t, len(got), len(recs))
			require.Greater(t, len(got), 2)
		})
	}
}

// TestZerosInSyncedRecord: a record whose own payload holds sectors of
// zeros, damaged by one flipped bit, with acknowledged records after it,
// is damage, not a power cut's tear: the records after it note that the
// log was synced past it. Replay refuses it (tail recovery) or discards
// and reports it (point in time); it never drops the records after it
// silently. The same bytes with no note after them (one write, one sync,
// as a power cut leaves them) are still a tear.
func TestZerosInSyncedRecord(t *testing.T) {
	recs := []rec{
		{1, "one" + strings.Repeat("\x00", 1100) + "end"},
		{1, "two"}, {1, "three"}, {1, "four"},
	}
	flip := func(t *testing.T, dir string) {
		path := filepath.Join(dir, SegmentName(1))
		data, err := os.ReadFile(path)
		require.NoError(t, err)
		data[HeaderLen+1] ^= 4 // in "one", before the zeros
		require.NoError(t, os.WriteFile(path, data, 0o644))
	}
	t.Run("each record synced", func(t *testing.T) {
		dir := t.TempDir()
		writeRecs(t, dir, SyncAlways, recs)
		flip(t, dir)
		for _, ro := range []bool{true, false} {
			_, _, err := replayWith(t, dir, 0, ReplayOptions{ReadOnly: ro})
			var ce *CorruptError
			require.ErrorAs(t, err, &ce, "read-only %v", ro)
			require.Zero(t, ce.Offset)
			require.Contains(t, ce.Reason, "synced past it")
		}
		info, err := os.Stat(filepath.Join(dir, SegmentName(1)))
		require.NoError(t, err)
		require.Greater(t, info.Size(), int64(1100), "nothing trimmed")
		got, st, err := replayWith(t, dir, 0, ReplayOptions{Recovery: RecoverPointInTime})
		require.NoError(t, err)
		require.Empty(t, got)
		require.Len(t, st.Damage, 1, "reported, not taken for a tear")
		require.Zero(t, st.Cut)
	})
	t.Run("one sync for all", func(t *testing.T) {
		dir := t.TempDir()
		appendRecs(t, dir, recs)
		flip(t, dir)
		got, st, err := replayWith(t, dir, 0, ReplayOptions{ReadOnly: true})
		require.NoError(t, err, "no sync note after it: a power cut explains it")
		require.Empty(t, got)
		require.Equal(t, 3, st.Cut)
	})
}

// TestSyncNotes: a write after a sync notes how far the segment is
// durable; replay never hands the notes to the caller.
func TestSyncNotes(t *testing.T) {
	dir := t.TempDir()
	recs := sample(20)
	writeRecs(t, dir, SyncAlways, recs)
	data, err := os.ReadFile(filepath.Join(dir, SegmentName(1)))
	require.NoError(t, err)
	notes, last := 0, int64(0)
	for off := 0; off < len(data); {
		f, bad := frameAt(data[off:])
		require.Empty(t, bad)
		if f.typ == typeSynced {
			at, ok := parseSynced(f.payload)
			require.True(t, ok)
			require.Greater(t, at, last)
			require.LessOrEqual(t, at, int64(off), "a note says no more than was written before it")
			notes, last = notes+1, at
		}
		off += f.size()
	}
	require.Equal(t, len(recs)-1, notes, "one before each write after the first")
	got, _, err := replayAll(t, dir, 0)
	require.NoError(t, err)
	require.Equal(t, recs, got)
}

// TestMissingSegment: a segment removed by hand, the last or one between
// others, is damage named by its file, not a log that ends earlier; a new
// Log never takes its number again. Point-in-time recovery keeps the log
// up to it and reports it.
func TestMissingSegment(t *testing.T) {
	for _, tc := range []struct {
		name   string
		remove uint64
		keep   int // records replayed with point-in-time recovery
	}{
		{"last", 3, 20},
		{"middle", 2, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			recs := sample(30)
			for i := range 3 {
				writeRecs(t, dir, SyncAlways, recs[i*10:(i+1)*10])
			}
			require.NoError(t, os.Remove(filepath.Join(dir, SegmentName(tc.remove))))
			for _, ro := range []bool{true, false} {
				_, _, err := replayWith(t, dir, 0, ReplayOptions{ReadOnly: ro})
				var ce *CorruptError
				require.ErrorAs(t, err, &ce)
				require.Equal(t, filepath.Join(dir, SegmentName(tc.remove)), ce.Path)
				require.Contains(t, ce.Reason, "missing")
			}
			// A writable open after it starts a new number, and the gap stays.
			l, err := Open(dir, Options{})
			require.NoError(t, err)
			require.Equal(t, uint64(4), l.Segment())
			require.NoError(t, l.Close())
			_, _, err = replayAll(t, dir, 0)
			require.ErrorIs(t, err, ErrCorrupt)

			got, st, err := replayWith(t, dir, 0, ReplayOptions{Recovery: RecoverPointInTime})
			require.NoError(t, err)
			require.Equal(t, recs[:tc.keep], got)
			require.NotEmpty(t, st.Damage, "the missing segment, then what came after it")
			require.Equal(t, filepath.Join(dir, SegmentName(tc.remove)), st.Damage[0].Path)
		})
	}
	t.Run("log without a marker", func(t *testing.T) {
		dir := t.TempDir()
		recs := sample(20)
		writeRecs(t, dir, SyncAlways, recs[:10])
		writeRecs(t, dir, SyncAlways, recs[10:])
		require.NoError(t, os.Remove(filepath.Join(dir, newestName)))
		got, _, err := replayAll(t, dir, 0)
		require.NoError(t, err, "a log written before the marker replays as before")
		require.Equal(t, recs, got)
	})
	t.Run("damaged marker", func(t *testing.T) {
		dir := t.TempDir()
		writeRecs(t, dir, SyncAlways, sample(3))
		require.NoError(t, os.WriteFile(filepath.Join(dir, newestName), []byte("x1"), 0o644))
		_, _, err := replayAll(t, dir, 0)
		require.ErrorIs(t, err, ErrCorrupt)
		require.ErrorContains(t, err, newestName)
	})
}
