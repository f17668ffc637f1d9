package table

import (
	"context"
	"log/slog"
	"math/bits"
	"math/rand/v2"
	"slices"
	"sync/atomic"
	"testing"

	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/simhashdb/simhashdb/permutation"
	"github.com/simhashdb/simhashdb/vfs"
	"github.com/stretchr/testify/require"
)

// readerOf stores fps in every table of a design for k, as a flush into
// empty tables does, and returns a Reader over them with a cache of
// cacheSize bytes.
func readerOf(t *testing.T, fps []uint64, k, block int, cacheSize int64) *Reader {
	t.Helper()
	d, err := permutation.Optimize(k, 6)
	require.NoError(t, err)
	s, err := store.Open(t.TempDir(), store.Options{FS: vfs.Default, Logger: slog.New(slog.DiscardHandler), CacheSize: 1 << 20, NewOrder: store.KeyOrder})
	require.NoError(t, err)
	t.Cleanup(func() { s.Close() })
	r := &Reader{Design: d.Tables, Tables: make([]Index, len(d.Tables)), Snap: s, Cache: cache.New(cacheSize), Reads: new(atomic.Int64)}
	var parts []store.Writes
	var all []Batches
	for tb := range d.Tables {
		perm := make([]uint64, len(fps))
		for i, fp := range fps {
			perm[i] = d.Tables[tb].Permute(fp)
		}
		bs := Batches{Blocks: s.NewBatch(), Dir: s.NewBatch(), Pend: s.NewBatch()}
		t.Cleanup(bs.Close)
		all = append(all, bs)
		old := Index{codes: codec.CodeMap{}}
		r.Tables[tb] = Index{codes: old.codes}
		_, err := Merge{Table: tb, Old: &old, New: &r.Tables[tb], BlockSize: block, Cache: r.Cache, Batches: &bs}.Run(slices.Compact(fingerprints.Sorted(perm)), nil)
		require.NoError(t, err)
	}
	for _, space := range []func(Batches) *store.Batch{
		func(b Batches) *store.Batch { return b.Blocks },
		func(b Batches) *store.Batch { return b.Dir },
		func(b Batches) *store.Batch { return b.Pend },
	} {
		for _, bs := range all {
			parts = append(parts, s.BatchWrites(space(bs)))
		}
	}
	require.NoError(t, s.Commit(context.Background(), parts...))
	return r
}

// TestReaderProbe checks ProbeAll against a scan of every stored
// fingerprint, on uniform, clustered and planted sets with 0 and all-ones
// among them, with a cache that holds every block, one that holds some
// (blocks come in on their second miss, cache.Cache.Admit) and one that
// holds almost none (each probe then reads its blocks, together, and scans
// most where it decoded them).
func TestReaderProbe(t *testing.T) {
	const k = 3
	rng := rand.New(rand.NewPCG(5, 5))
	for _, tc := range []struct {
		name string
		fps  []uint64
	}{
		{"uniform", fingerprints.Uniform(4000, 1)},
		{"clustered", fingerprints.Clustered(4000, 2)},
		{"planted", fingerprints.Planted(4000, k, 0.5, 3)},
	} {
		fps := append(slices.Clone(tc.fps), 0, ^uint64(0), 1, ^uint64(0)-1)
		set := slices.Compact(fingerprints.Sorted(slices.Clone(fps)))
		for _, cacheSize := range []int64{1 << 24, 1 << 16, 1 << 10} {
			r := readerOf(t, fps, k, 128, cacheSize)
			queries := append(fingerprints.Queries(fps, 300, 4), 0, ^uint64(0))
			for i := range 100 { // planted at every distance up to k+1
				queries = append(queries, fingerprints.Flip(fps[rng.IntN(len(fps))], i%(k+2), rng))
			}
			for _, q := range queries {
				want := map[uint64]int{}
				for _, fp := range set {
					if d := bits.OnesCount64(fp ^ q); d <= k {
						want[fp] = d
					}
				}
				got := map[uint64]int{}
				require.NoError(t, r.ProbeAll(q, k, func(fp uint64, d int) {
					require.Equal(t, bits.OnesCount64(fp^q), d, "%s: distance of %016x to %016x", tc.name, fp, q)
					got[fp] = d
				}))
				require.Equal(t, want, got, "%s, cache %d: query %016x", tc.name, cacheSize, q)
			}
			require.Zero(t, r.Reads.Load(), "reads in flight after the probes")
		}
	}
}

// TestReadMissesWholeRanges checks that a cold probe reads every block its
// ranges span in the one round readMisses makes, so that none is left for
// the probe to read after it (a round of its own): ranges of 6-bit
// prefixes over 128-byte blocks span several each.
func TestReadMissesWholeRanges(t *testing.T) {
	fps := fingerprints.Uniform(4000, 7)
	r := readerOf(t, fps, 3, 128, 1<<10)
	spanning := 0
	for _, q := range fingerprints.Queries(fps, 50, 8) {
		r.Cache = cache.New(1 << 24)
		for tb := range r.Tables {
			for j := range r.Tables[tb].Len() {
				r.Tables[tb].Slot(j).Store(nil)
			}
		}
		ps := make([]probeState, len(r.Design))
		for tb := range r.Design {
			ps[tb].pq = r.Design[tb].Permute(q)
			ps[tb].lo, ps[tb].hi = r.Design[tb].Range(ps[tb].pq)
			ps[tb].j, _, _ = r.Tables[tb].StartCached(ps[tb].lo)
		}
		require.NoError(t, r.readMisses(ps, viewPool.Get().(*views), nil))
		for tb := range ps {
			ti := &r.Tables[tb]
			for j := ps[tb].j; j < ti.Len(); j++ {
				if j > ps[tb].j {
					spanning++
					require.NotNil(t, ti.Slot(j).Peek(), "query %016x, table %d: block %d of the range (from block %d) not read with the others", q, tb, j, ps[tb].j)
				}
				if ti.Key(j) >= ps[tb].hi {
					break
				}
			}
		}
	}
	require.Positive(t, spanning, "no range spans blocks: the test checks nothing")
}

// TestProbeAdmits: once the cache is full, a probe's blocks that miss for
// the first time are scanned where they were decoded and not cached; on
// their second miss they are cached. Only blocks no probe missed before
// count as first misses: a block missed while the cache filled may be on
// its second miss already.
func TestProbeAdmits(t *testing.T) {
	const k = 3
	fps := fingerprints.Uniform(20000, 9)
	r := readerOf(t, fps, k, 64, 1<<16)
	qs := fingerprints.Queries(fps, 400, 10)
	missed := map[*cache.Slot]bool{} // every block some probe missed
	// missing lists the blocks of q's ranges that are not cached: those a
	// probe of q misses.
	missing := func(q uint64) (slots []*cache.Slot) {
		for tb := range r.Design {
			ti := &r.Tables[tb]
			lo, hi := r.Design[tb].Range(r.Design[tb].Permute(q))
			for j := ti.Start(lo); j < ti.Len(); j++ {
				if s := ti.Slot(j); s.Peek() == nil {
					slots = append(slots, s)
				}
				if ti.Key(j) >= hi {
					break
				}
			}
		}
		return slots
	}
	probe := func(q uint64) []*cache.Slot {
		slots := missing(q)
		require.NoError(t, r.ProbeAll(q, k, func(uint64, int) {}))
		return slots
	}
	for _, q := range qs[:200] { // fill the cache
		for _, s := range probe(q) {
			missed[s] = true
		}
	}
	used, _, _ := r.Cache.Stats()
	require.Greater(t, used, int64(1<<16)*9/10, "the cache is full")
	first, second, blocks := 0, 0, 0
	for _, q := range qs[200:] {
		var fresh []*cache.Slot
		for _, s := range probe(q) {
			if !missed[s] {
				fresh = append(fresh, s)
			}
			missed[s] = true
		}
		for _, s := range fresh {
			if s.Peek() != nil {
				first++
			}
		}
		require.NoError(t, r.ProbeAll(q, k, func(uint64, int) {}))
		for _, s := range fresh {
			if s.Peek() != nil {
				second++
			}
		}
		blocks += len(fresh)
	}
	require.Greater(t, blocks, 100, "too few blocks missed for the first time: the test checks little")
	t.Logf("%d blocks missed for the first time: %d cached then, %d after their second miss", blocks, first, second)
	require.Less(t, first, blocks/4, "blocks cached on their first miss in a full cache")
	require.Greater(t, second, blocks*3/4, "blocks cached on their second miss")
}
