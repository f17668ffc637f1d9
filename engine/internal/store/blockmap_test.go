package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/cockroachdb/pebble/v2/sstable"
	"github.com/cockroachdb/pebble/v2/sstable/block"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/engine/internal/uring"
	"github.com/simhashdb/simhashdb/internal/directio"
	"github.com/stretchr/testify/require"
)

// newRing returns a ring closed when the test ends, or skips the test
// where the kernel refuses one.
func newRing(t testing.TB) *uring.Ring {
	t.Helper()
	ring, err := uring.New(16)
	if errors.Is(err, uring.ErrUnsupported) {
		t.Skipf("no io_uring here: %v", err)
	}
	require.NoError(t, err)
	t.Cleanup(func() { ring.Close() })
	return ring
}

// loadKeys ingests one sstable of key=value for each of kv (in key order).
func loadKeys(t *testing.T, s *Store, kv map[string]string, keys []string) {
	t.Helper()
	l, err := s.NewLoad(1 << 20)
	require.NoError(t, err)
	defer l.Close()
	w, err := l.Create("part")
	require.NoError(t, err)
	for _, k := range keys {
		require.NoError(t, w.Set([]byte(k), []byte(kv[k])))
	}
	require.NoError(t, w.Close())
	require.NoError(t, l.Ingest(context.Background()))
}

// TestGetMany checks the values GetMany reads without Pebble against the
// store's own: every key, in batches, where a later load wrote some keys
// again (their files overlap: Pebble's), and keys not stored; then a
// damaged block is an error that Pebble's check of the block names too.
func TestGetMany(t *testing.T) {
	ring := newRing(t)
	for _, direct := range []bool{false, true} {
		t.Run(fmt.Sprint("direct=", direct), func(t *testing.T) { testGetMany(t, ring, direct) })
	}
}

func testGetMany(t *testing.T, ring *uring.Ring, direct bool) {
	dir := t.TempDir()
	s, err := openAt(t, dir, false)
	require.NoError(t, err)
	r := rand.New(rand.NewPCG(5, 5))
	want := map[string]string{}
	var low, high, again []string
	for i := range 3000 {
		k := fmt.Sprintf("\x03%06d", i)
		want[k] = fmt.Sprintf("v1-%d-%s", i, make([]byte, r.IntN(300)))
		if i < 2000 {
			low = append(low, k)
		} else {
			high = append(high, k)
		}
	}
	loadKeys(t, s, want, low)
	loadKeys(t, s, want, high)
	for i := 1500; i < 1600; i++ { // again, in a file over both
		k := fmt.Sprintf("\x03%06d", i)
		want[k] = fmt.Sprintf("v2-%d", i)
		again = append(again, k)
	}
	loadKeys(t, s, want, again)
	require.NoError(t, s.Close())

	s, err = Open(dir, Options{FS: vfs.Default, ReadOnly: true, Logger: slog.New(slog.DiscardHandler), CacheSize: 1 << 20, Ring: ring, DirectReads: direct})
	require.NoError(t, err)
	defer s.Close()
	snap := s.NewSnapshot()
	defer snap.Close()
	keys := make([]string, 0, len(want)+10)
	for k := range want {
		keys = append(keys, k)
	}
	for i := range 10 {
		keys = append(keys, fmt.Sprintf("\x03%06d-absent", i*300))
	}
	served := map[string]bool{}
	for from := 0; from < len(keys); from += 16 {
		batch := keys[from:min(from+16, len(keys))]
		bs := make([][]byte, len(batch))
		for i, k := range batch {
			bs[i] = []byte(k)
		}
		got := map[int]string{}
		missed, err := snap.GetMany(bs, func(i int, v []byte) error {
			got[i] = string(v)
			return nil
		})
		require.NoError(t, err)
		for _, i := range missed {
			require.NotContains(t, got, i, "a key both read and missed")
			v, c, err := snap.Get(bs[i])
			if errors.Is(err, ErrKeyNotFound) {
				require.NotContains(t, want, batch[i])
				continue
			}
			require.NoError(t, err)
			got[i] = string(v)
			c.Close()
		}
		for i, k := range batch {
			if w, ok := want[k]; ok {
				require.Equal(t, w, got[i], "key %q", k)
			}
			if _, ok := got[i]; ok && !slices.Contains(missed, i) {
				served[k] = true
			}
		}
	}
	require.Greater(t, len(served), 2000, "most keys' files do not overlap: read without Pebble")
	require.EqualValues(t, len(served), s.MappedReads())

	// Spans: ScanMany's keys, and those an iterator gives for the spans it
	// leaves, are the store's.
	sorted := slices.Sorted(maps.Keys(want))
	scanned := 0
	for range 200 {
		spans := make([][2][]byte, 1+r.IntN(8))
		for i := range spans {
			a, b := r.IntN(3100), r.IntN(60)
			spans[i] = [2][]byte{[]byte(fmt.Sprintf("\x03%06d", a)), []byte(fmt.Sprintf("\x03%06d", a+b))}
		}
		got := make([][]string, len(spans))
		missed, err := snap.ScanMany(spans, func(i int, k, v []byte) error {
			got[i] = append(got[i], string(k)+"="+string(v))
			return nil
		})
		require.NoError(t, err)
		for _, i := range missed {
			require.Empty(t, got[i], "a span both read and missed")
			it, err := snap.NewIter(IterOptions{Lower: spans[i][0], Upper: spans[i][1]})
			require.NoError(t, err)
			for ok := it.First(); ok; ok = it.Next() {
				v, err := it.Value()
				require.NoError(t, err)
				got[i] = append(got[i], string(it.Key())+"="+string(v))
			}
			require.NoError(t, it.Close())
		}
		for i, sp := range spans {
			var w []string
			for _, k := range sorted {
				if k >= string(sp[0]) && k < string(sp[1]) {
					w = append(w, k+"="+want[k])
				}
			}
			require.Equal(t, w, got[i], "span [%q, %q)", sp[0], sp[1])
			if !slices.Contains(missed, i) {
				scanned++
			}
		}
	}
	require.Greater(t, scanned, 500, "most spans read without Pebble")

	// ReadMany: keys and spans in one round, each answered as GetMany and
	// ScanMany answer it alone, the spans after the call; or never.
	oneRound := 0
	for n := range 50 {
		rs := Reads{Get: func(int, []byte) error { return nil }}
		for range 1 + r.IntN(8) {
			rs.Keys = append(rs.Keys, []byte(keys[r.IntN(len(keys))]))
		}
		for range 1 + r.IntN(3) {
			a := r.IntN(3100)
			rs.Spans = append(rs.Spans, [2][]byte{[]byte(fmt.Sprintf("\x03%06d", a)), []byte(fmt.Sprintf("\x03%06d", a+r.IntN(60)))})
		}
		got := map[int]string{}
		rs.Get = func(i int, v []byte) error { got[i] = string(v); return nil }
		// Pages dropped, the keys and spans read go to the disk in one
		// round. (Not always in one: a read-ahead still in flight, as on a
		// loaded machine, may bring every page back first.)
		dropped := directio.DropTree(dir) == nil
		rounds := s.ReadRounds()
		missedKeys, sp, err := snap.ReadMany(rs)
		require.NoError(t, err)
		require.LessOrEqual(t, s.ReadRounds(), rounds+1, "one round for keys and spans")
		if len(missedKeys) < len(rs.Keys) && dropped && s.ReadRounds() == rounds+1 {
			oneRound++
		}
		alone := map[int]string{}
		missed, err := snap.GetMany(rs.Keys, func(i int, v []byte) error { alone[i] = string(v); return nil })
		require.NoError(t, err)
		require.Equal(t, missed, missedKeys)
		require.Equal(t, alone, got)
		if n%5 == 0 {
			sp.Release() // not scanned
			continue
		}
		scans, aloneScans := make([][]string, len(rs.Spans)), make([][]string, len(rs.Spans))
		missedSpans, err := sp.Scan(func(i int, k, v []byte) error { scans[i] = append(scans[i], string(k)+"="+string(v)); return nil })
		require.NoError(t, err)
		sp.Release()
		missed, err = snap.ScanMany(rs.Spans, func(i int, k, v []byte) error {
			aloneScans[i] = append(aloneScans[i], string(k)+"="+string(v))
			return nil
		})
		require.NoError(t, err)
		require.Equal(t, missed, missedSpans)
		require.Equal(t, aloneScans, scans)
	}
	if directio.DropTree(dir) == nil {
		t.Logf("%d of 50 calls read from the disk in one round", oneRound)
		require.Greater(t, oneRound, 25, "calls that read their keys from the disk, in one round")
	}

	// A damaged data block: GetMany's error, and Pebble's.
	k := []byte(low[10])
	f, j, ok := s.blocks.locate(k)
	require.True(t, ok)
	h := f.handle(j)
	w, err := os.OpenFile(f.name, os.O_WRONLY, 0)
	require.NoError(t, err)
	_, err = w.WriteAt([]byte{0xff, 0x00, 0xff}, int64(h.Offset+h.Length/2))
	require.NoError(t, err)
	require.NoError(t, w.Sync())
	require.NoError(t, w.Close())
	_, err = snap.GetMany([][]byte{k}, func(int, []byte) error { return nil })
	require.Error(t, err)
	require.True(t, IsCorruption(err), "%v", err)
	require.Contains(t, err.Error(), f.name)
}

// TestOnlyFile checks which file the map takes a key or a span to: the one
// file whose range meets it, at any level, and none where two do, level
// 0's overlapping files included.
func TestOnlyFile(t *testing.T) {
	file := func(lo, hi string) mappedFile {
		return mappedFile{smallest: []byte(lo), largest: []byte(hi), name: lo + ".." + hi, offs: []uint64{0}}
	}
	m := &blockMap{cmp: bytes.Compare, levels: [][]mappedFile{
		{file("a", "z"), file("b", "c"), file("c", "y")}, // level 0, by smallest
		{},
		{file("0", "1"), file("2", "3"), file("4", "5")},
	}}
	for _, tc := range []struct {
		lo, hi string // hi "": a key
		want   string // "": none
	}{
		{"x", "", ""},        // two of level 0's files
		{"b", "", ""},        // a..z and b..c
		{"a", "", "a..z"},    // only the first
		{"2", "", "2..3"},    // a deeper level's
		{"3", "", "2..3"},    // its largest key
		{"35", "", ""},       // between files
		{"1", "4", ""},       // a span over two files
		{"25", "3", "2..3"},  // a span in one
		{"31", "4", ""},      // between files, and the next's first key excluded
		{"31", "41", "4..5"}, // into the next
		{"zz", "zzz", ""},    // past every file
	} {
		var hi []byte
		if tc.hi != "" {
			hi = []byte(tc.hi)
		}
		f, ok := m.only([]byte(tc.lo), hi)
		if tc.want == "" {
			if ok {
				t.Errorf("[%q, %q): %s, want none", tc.lo, tc.hi, f.name)
			}
			continue
		}
		require.True(t, ok, "[%q, %q)", tc.lo, tc.hi)
		require.Equal(t, tc.want, f.name, "[%q, %q)", tc.lo, tc.hi)
	}
}

// TestSearchBlocks checks the block a key is looked for in against a
// binary search of whole separators: separators that share their first 8
// bytes (a fingerprint stored many times), shorter than 8 bytes, all 0xff,
// and keys between, equal to and around them.
func TestSearchBlocks(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, tc := range []struct {
		name string
		sep  func() []byte
	}{
		{"uniform", func() []byte { return binaryKey(r, 9) }},
		{"one head", func() []byte { return append([]byte{7, 7, 7, 7, 7, 7, 7, 7}, binaryKey(r, 2)...) }},
		{"few heads", func() []byte { return append([]byte{1, 2, 3, 4, 5, 6, 7, byte(r.IntN(3))}, binaryKey(r, r.IntN(3))...) }},
		{"short", func() []byte { return binaryKey(r, r.IntN(9)) }},
		{"all ones", func() []byte { return bytes.Repeat([]byte{0xff}, 8+r.IntN(3)) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var seps [][]byte
			for range 300 {
				seps = append(seps, tc.sep())
			}
			slices.SortFunc(seps, bytes.Compare)
			seps = slices.CompactFunc(seps, bytes.Equal)
			var f mappedFile
			for _, s := range seps {
				f.seps = append(f.seps, s...)
				f.sepEnd = append(f.sepEnd, uint32(len(f.seps)))
				f.heads = append(f.heads, head(s))
			}
			f.indexHeads()
			keys := [][]byte{nil, {0}, bytes.Repeat([]byte{0xff}, 12)}
			for _, s := range seps {
				keys = append(keys, s, append(slices.Clone(s), 0), s[:len(s)/2], tc.sep())
				if len(s) > 0 {
					less := slices.Clone(s)
					less[len(less)-1]--
					keys = append(keys, less)
				}
			}
			for _, k := range keys {
				want, _ := slices.BinarySearchFunc(seps, k, bytes.Compare)
				require.Equal(t, want, f.search(k), "key %x", k)
			}
		})
	}
}

func binaryKey(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	return b
}

// TestDirectReadsAskCache: once a file's direct reads have found nothing
// in the page cache for a while, most stop asking it; when the file is
// brought into the page cache again, the map finds that within
// checkAfter reads and reads it from there.
func TestDirectReadsAskCache(t *testing.T) {
	ring := newRing(t)
	dir := t.TempDir()
	s, err := openAt(t, dir, false)
	require.NoError(t, err)
	kv := map[string]string{}
	var keys []string
	for i := range 2000 {
		k := fmt.Sprintf("\x03%06d", i)
		kv[k] = fmt.Sprintf("v-%d-%s", i, make([]byte, 200))
		keys = append(keys, k)
	}
	loadKeys(t, s, kv, keys)
	require.NoError(t, s.Close())
	require.NoError(t, directio.DropTree(dir))
	s, err = Open(dir, Options{FS: vfs.Default, ReadOnly: true, Logger: slog.New(slog.DiscardHandler), CacheSize: 1 << 20, Ring: ring, DirectReads: true})
	require.NoError(t, err)
	defer s.Close()
	snap := s.NewSnapshot()
	defer snap.Close()
	f := s.blocks.files[0]
	if _, err := directio.Cached(f.fd, 0, 1); err != nil {
		t.Skipf("the kernel cannot say what the page cache holds: %v", err)
	}
	get := func(i int) {
		missed, err := snap.GetMany([][]byte{[]byte(keys[i])}, func(int, []byte) error { return nil })
		require.NoError(t, err)
		require.Empty(t, missed)
	}
	for i := range 3 * checkAfter {
		require.Equal(t, i < checkAfter || i%checkAfter == 0, f.checkCache(), "read %d of a file the page cache does not hold", i)
		get(i * 37)
	}
	require.EqualValues(t, 3*checkAfter, s.ReadRounds(), "every read from the disk")

	// The file in the page cache again (read through it whole).
	_, err = os.ReadFile(f.name)
	require.NoError(t, err)
	for i := range checkAfter {
		get(i * 41)
	}
	rounds := s.ReadRounds()
	for i := range checkAfter {
		get(i * 43)
	}
	require.Equal(t, rounds, s.ReadRounds(), "reads the page cache holds went to the disk")
	require.Less(t, rounds, int64(4*checkAfter), "no read found the page cache")
}

// TestMapOffsets checks the map's places of data blocks, kept as offsets
// alone (a block's length is the distance to the next): in files of
// small and of large values, every block's handle is the one the file's
// own index gives.
func TestMapOffsets(t *testing.T) {
	s := mappedStore(t, rand.New(rand.NewPCG(7, 7)), []randomFile{{"\x03", 2000, 40}, {"\x04", 2000, 3000}})
	require.Len(t, s.blocks.files, 2)
	for _, f := range s.blocks.files {
		require.True(t, f.readable(), f.name)
		vf, err := vfs.Default.Open(f.name)
		require.NoError(t, err)
		rd, err := sstable.NewSimpleReadable(vf)
		require.NoError(t, err)
		pr, err := sstable.NewReader(context.Background(), rd, s.ReaderOptions())
		require.NoError(t, err)
		lay, err := pr.Layout()
		require.NoError(t, err)
		require.Greater(t, len(lay.Data), 10, f.name)
		require.Equal(t, len(lay.Data), f.blocks(), f.name)
		for j, h := range lay.Data {
			require.Equal(t, h.Handle, f.handle(j), "%s: block %d", f.name, j)
		}
		require.NoError(t, pr.Close())
	}
}

// TestMapBackToBack: the map keeps a file whose data blocks lie back to
// back, each block's handle derived from the offsets, and refuses one with
// a gap or an overlap between two blocks (Pebble then reads that file).
func TestMapBackToBack(t *testing.T) {
	const tr = block.TrailerLen
	tests := []struct {
		name    string
		handles []block.Handle
		ok      bool
	}{
		{"none", nil, true},
		{"one", []block.Handle{{Offset: 0, Length: 100}}, true},
		{"three", []block.Handle{{Offset: 0, Length: 100}, {Offset: 100 + tr, Length: 4000}, {Offset: 4100 + 2*tr, Length: 1}}, true},
		{"not from 0", []block.Handle{{Offset: 512, Length: 100}, {Offset: 612 + tr, Length: 7}}, true},
		{"gap", []block.Handle{{Offset: 0, Length: 100}, {Offset: 101 + tr, Length: 100}}, false},
		{"gap the size of a trailer", []block.Handle{{Offset: 0, Length: 100}, {Offset: 100 + 2*tr, Length: 100}}, false},
		{"overlap", []block.Handle{{Offset: 0, Length: 100}, {Offset: 100, Length: 100}}, false},
		{"gap after two", []block.Handle{{Offset: 0, Length: 10}, {Offset: 10 + tr, Length: 10}, {Offset: 4096, Length: 10}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var f mappedFile
			var end uint64
			ok := true
			for j, h := range tc.handles {
				sep := binary.BigEndian.AppendUint64([]byte("\x04"), uint64(j))
				var added bool
				if end, added = f.appendBlock(sep, h, end); !added {
					ok = false
					require.Len(t, f.heads, j, "a refused block is not added")
					break
				}
			}
			require.Equal(t, tc.ok, ok)
			if !ok {
				return
			}
			f.endBlocks(end)
			require.Equal(t, len(tc.handles), f.blocks())
			for j, h := range tc.handles {
				require.Equal(t, h, f.handle(j), "block %d", j)
				require.Equal(t, j, f.search(f.sep(j)), "block %d's separator", j)
			}
		})
	}
}

// randomFile is n keys prefix%08d (0, 1, ...) of random values of size
// bytes on average.
type randomFile struct {
	prefix  string
	n, size int
}

// mappedStore returns a read-only store with a block map (closed when the
// test ends) of one file of each of files, loaded into a new folder.
func mappedStore(t testing.TB, r *rand.Rand, files []randomFile) *Store {
	ring := newRing(t)
	dir := t.TempDir()
	s, err := Open(dir, Options{FS: vfs.Default, Logger: slog.New(slog.DiscardHandler), CacheSize: 1 << 20, NewOrder: KeyOrder})
	require.NoError(t, err)
	l, err := s.NewLoad(1 << 27)
	require.NoError(t, err)
	for x, f := range files {
		w, err := l.Create(fmt.Sprint("part-", x))
		require.NoError(t, err)
		v := make([]byte, 2*f.size)
		for i := range f.n {
			for j := range v {
				v[j] = byte(r.Uint32())
			}
			require.NoError(t, w.Set(fmt.Appendf(nil, "%s%08d", f.prefix, i), v[:f.size/2+r.IntN(f.size)]))
		}
		require.NoError(t, w.Close())
	}
	require.NoError(t, l.Ingest(context.Background()))
	require.NoError(t, l.Close())
	require.NoError(t, s.Close())
	s, err = Open(dir, Options{FS: vfs.Default, ReadOnly: true, Logger: slog.New(slog.DiscardHandler), CacheSize: 1 << 20, Ring: ring})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	return s
}
