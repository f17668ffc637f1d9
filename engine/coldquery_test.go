package engine

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/internal/directio"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/stretchr/testify/require"
)

// slowFS models a disk whose reads take delay each and overlap: every
// read of an sstable sleeps first. (A sleep lasts at least the timer's
// resolution, so the delay models a slow disk rather than a fast SSD;
// bench/results/journal.md says what it came to here.)
type slowFS struct {
	vfs.FS
	delay time.Duration
	// one, when set, makes the disk read one block at a time: reads
	// issued together wait for each other.
	one *sync.Mutex
}

func (s slowFS) Open(name string, opts ...vfs.OpenOption) (vfs.File, error) {
	f, err := s.FS.Open(name, opts...)
	if err != nil || !strings.HasSuffix(name, ".sst") {
		return f, err
	}
	return slowFile{f, s.delay, s.one}, nil
}

type slowFile struct {
	vfs.File
	delay time.Duration
	one   *sync.Mutex
}

func (f slowFile) ReadAt(p []byte, off int64) (int, error) {
	if f.one != nil {
		f.one.Lock()
		defer f.one.Unlock()
	}
	time.Sleep(f.delay)
	return f.File.ReadAt(p, off)
}

// BenchmarkColdQuery measures queries that miss the engine's cache on a
// slow disk whose reads overlap (slowFS): the blocks a probe misses read
// together, and, as the baseline in the same run, on a disk that reads
// one block at a time (what reading them one table after another costs).
// Random queries over 1M stored fingerprints, a 1 MiB cache.
func BenchmarkColdQuery(b *testing.B) {
	dir := b.TempDir()
	n := 1 << 20
	db, err := Open(dir, Options{SizeHint: int64(n), Sync: SyncNone})
	require.NoError(b, err)
	fps := fingerprints.Uniform(n, 1)
	docs := make([]Doc, n)
	for i, fp := range fps {
		docs[i] = Doc{ID: uint64(i), Fingerprint: fp}
	}
	require.NoError(b, db.Load(ctx, DocsOf(docs)))
	require.NoError(b, db.Close())
	qs := fingerprints.Uniform(1<<16, 2)
	for _, mode := range []struct {
		name string
		one  *sync.Mutex
	}{{"together", nil}, {"one-by-one", new(sync.Mutex)}} {
		b.Run(mode.name, func(b *testing.B) {
			o := Options{ReadOnly: true, CacheSize: 1 << 20, FS: slowFS{vfs.Default, time.Millisecond, mode.one}}
			db, err := Open(dir, o)
			require.NoError(b, err)
			defer db.Close()
			_, _, missed := db.cache.Stats()
			read, rounds := db.store.Reads(), db.store.ReadRounds()
			for i := 0; b.Loop(); i++ {
				if _, err := db.Query(ctx, qs[i%len(qs)], 3); err != nil {
					b.Fatal(err)
				}
			}
			_, _, misses := db.cache.Stats()
			b.ReportMetric(float64(misses-missed)/float64(b.N), "block-misses/op")
			b.ReportMetric(float64(db.store.Reads()-read)/float64(b.N), "sst-reads/op")
			b.ReportMetric(float64(db.store.ReadRounds()-rounds)/float64(b.N), "read-rounds/op")
		})
	}
}

// uniformIndex returns the folder of a new, closed index of n uniform
// fingerprints.
func uniformIndex(b *testing.B, n int) string {
	dir := b.TempDir()
	db, err := Open(dir, Options{SizeHint: int64(n), Sync: SyncNone})
	require.NoError(b, err)
	loadUniform(b, db, n)
	require.NoError(b, db.Close())
	return dir
}

// BenchmarkPageCacheQuery measures queries that miss the engine's cache
// and find their blocks in the operating system's page cache (an index
// larger than the cache it was given, smaller than the machine's memory):
// read through the io_uring ring (where the kernel allows one), through it
// with ReadsDirect (cachestat, then pread), and, as the baseline in the
// same run, with pread. Random queries over 1M stored fingerprints, a
// 1 MiB cache.
func BenchmarkPageCacheQuery(b *testing.B) {
	dir := uniformIndex(b, 1<<20)
	qs := fingerprints.Uniform(1<<16, 2)
	for _, mode := range []ReadMode{ReadsBuffered, ReadsBlocking, ReadsDirect} {
		b.Run(mode.String(), func(b *testing.B) {
			db, err := Open(dir, Options{ReadOnly: true, CacheSize: 1 << 20, Reads: mode})
			require.NoError(b, err)
			defer db.Close()
			for _, q := range qs { // every page read once: the page cache holds them
				if _, err := db.Query(ctx, q, 3); err != nil {
					b.Fatal(err)
				}
			}
			read := db.store.Reads()
			for i := 0; b.Loop(); i++ {
				if _, err := db.Query(ctx, qs[i%len(qs)], 3); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(db.store.Reads()-read)/float64(b.N), "sst-reads/op")
			if db.ring != nil {
				b.ReportMetric(1, "ring")
			}
		})
	}
}

// BenchmarkColdQuerySplit measures cold queries where Pebble's index
// blocks outgrow its base share of the cache (as at 100M stored
// fingerprints with a 32 MiB cache, here at 1M with a 1 MiB cache and
// the 8 MiB floor lowered): with the share grown to hold them ("grown")
// and, as the baseline in the same run, kept at its base ("base").
func BenchmarkColdQuerySplit(b *testing.B) {
	dir := uniformIndex(b, 1<<20)
	qs := fingerprints.Uniform(1<<16, 2)
	for _, mode := range []struct {
		name  string
		fixed bool
	}{{"grown", false}, {"base", true}} {
		b.Run(mode.name, func(b *testing.B) {
			o := Options{ReadOnly: true, CacheSize: 1 << 20, FS: slowFS{vfs.Default, 100 * time.Microsecond, nil}}
			o.knobs.minPebbleCache = 64 << 10
			if mode.fixed {
				o.knobs.maxPebbleShare = 1.0 / cache.PebbleCacheShare
			}
			db, err := Open(dir, o)
			require.NoError(b, err)
			defer db.Close()
			// Past the first queries, which read the index blocks in.
			for _, q := range qs[len(qs)-2000:] {
				if _, err := db.Query(ctx, q, 3); err != nil {
					b.Fatal(err)
				}
			}
			read := db.store.Reads()
			for i := 0; b.Loop(); i++ {
				if _, err := db.Query(ctx, qs[i%(len(qs)-2000)], 3); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(db.store.Reads()-read)/float64(b.N), "sst-reads/op")
			b.ReportMetric(float64(db.store.CacheShare()>>10), "pebble-KiB")
		})
	}
}

// TestColdQueryReadsTogether: a probe that misses the cache in several
// tables, and reads the misses together, answers as one that finds them
// cached (the oracle tests check the rest), also where ranges span
// several blocks (the paper's 4 tables, small blocks).
func TestColdQueryReadsTogether(t *testing.T) {
	t.Parallel()
	paper4, err := permutation.Paper(4)
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		n    int
		o    Options
	}{
		{"optimiser", 1 << 14, Options{SizeHint: 1 << 14}},
		{"4 tables, 64-byte blocks", 1 << 18, Options{Design: paper4, BlockSize: 64}},
		// Ranges of a few blocks each, read together with the first.
		{"4 tables, ranges over blocks", 1 << 20, Options{Design: paper4, BlockSize: 64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := openT(t, dir, tc.o)
			fps := fingerprints.Planted(tc.n, 3, 0.05, 3)
			docs := make([]Doc, len(fps))
			for i, fp := range fps {
				docs[i] = Doc{ID: uint64(i), Fingerprint: fp}
			}
			require.NoError(t, db.Load(ctx, DocsOf(docs)))
			require.NoError(t, db.Close())
			answers := map[bool][][]Match{}
			for _, cold := range []bool{true, false} {
				o := Options{ReadOnly: true, CacheSize: 1 << 20}
				if !cold {
					o.CacheSize = 1 << 30
				}
				db := openT(t, dir, o)
				if !cold {
					require.NoError(t, db.Warm(ctx))
				}
				_, _, missed := db.cache.Stats()
				for _, q := range fingerprints.Queries(fps, 500, 4) {
					if cold {
						db.cache.Clear()
					}
					m, err := db.Query(ctx, q, 3)
					require.NoError(t, err)
					answers[cold] = append(answers[cold], m)
				}
				_, _, misses := db.cache.Stats()
				if cold {
					require.Greater(t, misses-missed, uint64(500*len(db.design.Tables)/2), "the probes missed")
				} else {
					require.Zero(t, misses-missed, "the probes found every block cached")
				}
				require.NoError(t, db.Close())
			}
			require.Equal(t, answers[true], answers[false])
		})
	}
}

// TestColdQueryOwnUnit: a cold query of a read-only store reads its own
// postings unit with its table blocks, so that a match there (a duplicate,
// or a neighbour in the low bits) waits for one round of the disk, not
// two; a query without one waits for one too, also where its ranges span
// more blocks than maxMissReads. Their answers are the brute-force
// oracle's, names included.
func TestColdQueryOwnUnit(t *testing.T) {
	t.Parallel()
	six, err := permutation.Blocks(5, 6) // 6 tables of 10- and 11-bit prefixes
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		n    int
		o    Options
	}{
		{"optimiser", 1 << 15, Options{}},
		// Ranges of several blocks a table: a query reads more blocks
		// than maxMissReads, and its own unit still with them.
		{"6 tables of short prefixes, 64-byte blocks", 1 << 17, Options{Design: six, K: 5, BlockSize: 64}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			checkOwnUnit(t, fingerprints.Uniform(tc.n, 9), tc.o)
		})
	}
}

// checkOwnUnit is TestColdQueryOwnUnit on an index of fps made with o.
func checkOwnUnit(t *testing.T, fps []uint64, o Options) {
	db, dir, docs := coldIndexWith(t, fps, o)
	r := rand.New(rand.NewPCG(9, 9))
	waited := 0
	for i := range 200 {
		q := r.Uint64() // no match
		if i%2 == 0 {
			q = fingerprints.Flip(fps[r.IntN(len(fps))], i/2%4, r) // may leave the unit
			if i%4 == 0 {
				q = fps[r.IntN(len(fps))] ^ uint64(i/4%8) // the low bits only: its own unit
			}
		}
		db.cache.Clear()
		dropped := directio.DropTree(dir) == nil
		rounds := db.store.ReadRounds()
		got, err := db.Query(ctx, q, 3)
		require.NoError(t, err)
		var want []Match
		for _, d := range docs {
			if dist := bits.OnesCount64(d.Fingerprint ^ q); dist <= 3 {
				want = append(want, Match{d, dist})
			}
		}
		slices.SortFunc(want, Nearer)
		require.Equal(t, want, got, "query %#x", q)
		if i%4 == 0 && dropped {
			require.Equal(t, rounds+1, db.store.ReadRounds(), "a match in the query's own unit: one round (query %#x)", q)
			waited++
		}
	}
	if runtime.GOOS == "linux" {
		require.Positive(t, waited, "rounds checked")
	}
}

// TestQueryFingerprintsOneRound: without writes in memory, a cold
// QueryFingerprints reads its table blocks in one round of the disk and
// no postings, also where its matches lie outside its own postings unit
// (which Query reads in a second round); its answers are the oracle's.
func TestQueryFingerprintsOneRound(t *testing.T) {
	t.Parallel()
	fps := fingerprints.Uniform(1<<15, 10)
	for i := range 64 { // duplicates: a fingerprint of several documents
		fps = append(fps, fps[i*7])
	}
	db, dir, docs := coldIndex(t, fps)
	model := oracleOf(docs)
	r := rand.New(rand.NewPCG(10, 10))
	var oneRound, queryTwo, checked int
	for i := range 200 {
		q := r.Uint64() // no match
		if i%2 == 0 {
			q = fingerprints.Flip(fps[r.IntN(len(fps))], i/2%4, r)
		}
		want := nearOf(model.query(q, 3))
		for _, way := range []string{"fingerprints", "documents"} {
			db.cache.Clear()
			dropped := directio.DropTree(dir) == nil
			rounds := db.store.ReadRounds()
			if way == "fingerprints" {
				got, err := db.QueryFingerprints(ctx, nil, q, 3)
				require.NoError(t, err)
				require.Equal(t, want, got, "query %#x", q)
			} else {
				ms, err := db.Query(ctx, q, 3)
				require.NoError(t, err)
				require.Equal(t, want, nearOf(ms), "query %#x", q)
			}
			n := db.store.ReadRounds() - rounds
			if !dropped {
				continue
			}
			switch {
			case way == "fingerprints":
				checked++
				require.LessOrEqual(t, n, int64(1), "query %#x: the tables alone, one round", q)
				if n == 1 {
					oneRound++
				}
			case n > 1:
				queryTwo++
			}
		}
	}
	if runtime.GOOS == "linux" && checked > 0 {
		require.Greater(t, oneRound, checked/2, "queries that read the disk once")
		require.Positive(t, queryTwo, "Query read a second round for some of the same queries")
	}
}

// coldIndex loads a document a fingerprint of fps (id i, named doc-i) into
// a new index and opens it read-only (closed when the test ends), with a
// small cache, read direct: a block read twice waits for the disk twice,
// as it would at an index larger than the memory. It skips the test where
// the kernel refuses io_uring (every read is then Pebble's).
func coldIndex(t *testing.T, fps []uint64) (*DB, string, []Doc) {
	t.Helper()
	return coldIndexWith(t, fps, Options{})
}

// coldIndexWith is coldIndex with the index made with o.
func coldIndexWith(t *testing.T, fps []uint64, o Options) (*DB, string, []Doc) {
	t.Helper()
	dir := t.TempDir()
	o.SizeHint = int64(len(fps))
	db := openT(t, dir, o)
	docs := make([]Doc, len(fps))
	for i, fp := range fps {
		docs[i] = Doc{ID: uint64(i), Fingerprint: fp, Name: fmt.Sprintf("doc-%d", i)}
	}
	require.NoError(t, db.Load(ctx, DocsOf(docs)))
	require.NoError(t, db.Close())
	db = openT(t, dir, Options{ReadOnly: true, CacheSize: 1 << 20, Reads: ReadsDirect})
	t.Cleanup(func() { db.Close() })
	if db.ring == nil || !db.st.snap.Mapped() {
		t.Skip("no io_uring here: every read is Pebble's")
	}
	return db, dir, docs
}
