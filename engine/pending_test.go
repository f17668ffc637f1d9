package engine

import (
	"encoding/binary"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/simhashdb/simhashdb/engine/internal/table"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/stretchr/testify/require"
)

// TestPendingLists adds to a loaded index in many small flushes, so that
// blocks gather pending lists, fill them and get rewritten, with deletes and
// replacements on the way and fingerprints above every block key (0 and
// all-ones arrive late), and checks every query, Check and a reopen against
// the oracle.
func TestPendingLists(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 3))
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	defer func() { db.Close() }()
	model := oracle{}
	// The loaded fingerprints have few 1-bits, so in every table they all
	// lie below the range of all-ones: added late, all-ones and its
	// neighbours then lie above every block key, in the last block's
	// pending list.
	var docs []Doc
	for i := range 4000 {
		fp := r.Uint64() & r.Uint64() & r.Uint64()
		docs = append(docs, Doc{ID: uint64(i), Fingerprint: fp})
	}
	require.NoError(t, db.Load(ctx, DocsOf(docs)))
	for _, d := range docs {
		model[d.ID] = d
	}
	next := uint64(len(docs))
	sawPending, sawFull := false, false
	nearFull := map[int]uint64{} // by table: a block whose pending list came near full
	for round := range 60 {
		batch := make([]Doc, 0, 100)
		for i := range 100 {
			fp := r.Uint64() & r.Uint64() & r.Uint64()
			switch {
			case round == 40 && i < 3:
				fp = fingerprints.Flip(^uint64(0), i, r)
			case round == 41 && i == 0:
				fp = 0
			case i%3 == 0: // a near neighbour of a stored document
				fp = fingerprints.Flip(docs[r.IntN(len(docs))].Fingerprint, r.IntN(4), r)
			}
			batch = append(batch, Doc{ID: next, Fingerprint: fp})
			next++
		}
		require.NoError(t, db.InsertBatch(ctx, batch))
		for _, d := range batch {
			model[d.ID] = d
			docs = append(docs, d)
		}
		for range 3 {
			victim := docs[r.IntN(len(docs))]
			require.NoError(t, db.Delete(ctx, victim.ID))
			delete(model, victim.ID)
		}
		re := docs[r.IntN(len(docs))]
		re.Fingerprint = fingerprints.Flip(re.Fingerprint, 1+r.IntN(3), r)
		require.NoError(t, db.Insert(ctx, re))
		model[re.ID] = re
		require.NoError(t, db.Flush(ctx))
		for t, ti := range db.st.tables {
			sawPending = sawPending || ti.PendingTotal() > 0
			// A list near full that a later flush merged into its block.
			if j, ok := slices.BinarySearch(ti.Keys(), nearFull[t]); nearFull[t] != 0 && (!ok || ti.Pending(j) < format.PendingMax-8) {
				sawFull = true
			}
			for j := range ti.Keys() {
				if ti.Pending(j) >= format.PendingMax-8 {
					nearFull[t] = ti.Key(j)
				}
			}
		}
		if round%15 == 14 || round == 40 {
			checkQueries(t, db, model, queries(model, 3, 120, r), "pending")
			_, err := db.Check(ctx)
			require.NoError(t, err)
		}
		if round == 30 {
			require.NoError(t, db.Close())
			db = openT(t, dir, Options{Sync: SyncNone, MemtableSize: 64 << 10})
			checkQueries(t, db, model, queries(model, 3, 60, r), "reopened with pending lists")
		}
	}
	require.True(t, sawPending, "flushes used pending lists")
	require.True(t, sawFull, "some block's pending list came near full and was merged into it")
	qs := queries(model, 3, 200, r)
	checkQueries(t, db, model, qs, "end")
	// A cold cache reads blocks and their pending lists from Pebble.
	db.cache.Clear()
	checkQueries(t, db, model, qs, "cold")
}

// TestPendingAddsReadNoBlocks checks that a flush of new fingerprints into
// blocks whose pending lists have room reads none of those blocks: in an
// index larger than the cache, reading them would cost more than the
// flush's writes. A fingerprint stored already must not join a pending
// list (it would be in its block twice): Check and the oracle see to that.
func TestPendingAddsReadNoBlocks(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(4, 4))
	db := openT(t, t.TempDir(), testOptions())
	defer db.Close()
	docs := corpus(3000, 5)
	require.NoError(t, db.Load(ctx, DocsOf(docs)))
	model := oracleOf(docs)
	db.cache.Clear()
	_, _, missed := db.cache.Stats()
	next := uint64(1 << 40)
	var batch []Doc
	for i := range 8 {
		fp := r.Uint64()
		if i < 2 { // stored already, under another id
			fp = docs[r.IntN(len(docs))].Fingerprint
		}
		batch = append(batch, Doc{ID: next, Fingerprint: fp})
		next++
	}
	require.NoError(t, db.InsertBatch(ctx, batch))
	require.NoError(t, db.Flush(ctx))
	_, _, misses := db.cache.Stats()
	require.Equal(t, missed, misses, "blocks read by the flush")
	pending := 0
	for t := range db.st.tables {
		pending += int(db.st.tables[t].PendingTotal())
	}
	require.Equal(t, 6*len(db.st.tables), pending, "the 6 new fingerprints, in a pending list of every table")
	for _, d := range batch {
		model[d.ID] = d
	}
	checkQueries(t, db, model, queries(model, 3, 100, r), "after the flush")
	_, err := db.Check(ctx)
	require.NoError(t, err)
}

// TestPendingAppendsReadNoLists checks that a flush appends new fingerprints
// to pending lists without reading them: it damages every stored list
// behind the engine's back (a fingerprint twice), and the next flush into
// those blocks still succeeds (a read would have failed on the damage).
// Check then finds the damage and names where it is.
func TestPendingAppendsReadNoLists(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 5))
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	defer func() { db.Close() }()
	require.NoError(t, db.Load(ctx, DocsOf(corpus(3000, 6))))
	next := uint64(1 << 40)
	insert := func(n int) {
		var batch []Doc
		for range n {
			batch = append(batch, Doc{ID: next, Fingerprint: r.Uint64()})
			next++
		}
		require.NoError(t, db.InsertBatch(ctx, batch))
		require.NoError(t, db.Flush(ctx))
	}
	insert(40)
	damaged := 0
	for t2, ti := range db.st.tables {
		for j, key := range ti.Keys() {
			if ti.Pending(j) > 0 {
				// Its first fingerprint again, as one more run: open counts
				// the list without noticing, a read fails on it.
				k := format.TableKey(format.SpacePending, t2, key)
				v, c, err := db.store.Get(k)
				require.NoError(t, err)
				bad := append(slices.Clone(v), format.AppendPendingRun([]byte{0}, []uint64{binary.BigEndian.Uint64(v)})...)
				require.NoError(t, c.Close())
				setRaw(t, db, k, bad)
				damaged++
			}
		}
	}
	require.Positive(t, damaged)
	// Reopened: the flush reads a snapshot that holds the damage, and no
	// cached block.
	require.NoError(t, db.Close())
	db = openT(t, dir, testOptions())
	before := pendingCounts(&db.st.tables[0])
	insert(40)
	appended := 0
	for j, n := range pendingCounts(&db.st.tables[0]) {
		if j < len(before) && before[j] > 0 && n > before[j] {
			appended++
		}
	}
	require.Positive(t, appended, "blocks whose damaged list the second flush appended to")
	_, err := db.Check(ctx)
	require.ErrorIs(t, err, ErrCorrupt)
	require.Contains(t, err.Error(), "pending list holds")
	require.Contains(t, err.Error(), "twice")
	require.Contains(t, err.Error(), "block")
}

// TestOpensVersion2 opens an index as version 2 wrote it (pending lists of
// one run, counted in the directory entries) and checks that it answers,
// takes more flushes and becomes version 3.
func TestOpensVersion2(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(6, 6))
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	defer func() { db.Close() }()
	docs := corpus(3000, 7)
	require.NoError(t, db.Load(ctx, DocsOf(docs)))
	model := oracleOf(docs)
	next := uint64(1 << 40)
	insert := func(n int) {
		var batch []Doc
		for range n {
			d := Doc{ID: next, Fingerprint: r.Uint64()}
			batch = append(batch, d)
			model[d.ID] = d
			next++
		}
		require.NoError(t, db.InsertBatch(ctx, batch))
		require.NoError(t, db.Flush(ctx))
	}
	insert(40) // into empty pending lists: one run each, as version 2 wrote them
	// Version 2's directory entries: the size, then the pending count.
	pending := 0
	for t2, ti := range db.st.tables {
		for j, key := range ti.Keys() {
			if n := ti.Pending(j); n > 0 {
				v := binary.AppendUvarint(format.DirValue(ti.Entry(j)), uint64(n))
				setRaw(t, db, format.TableKey(format.SpaceBlockDir, t2, key), v)
				pending += n
			}
		}
	}
	require.Positive(t, pending)
	setRaw(t, db, format.MetaFormat, binary.BigEndian.AppendUint32(nil, 2))
	require.NoError(t, db.Close())

	db = openT(t, dir, testOptions())
	reopened := 0
	for _, ti := range db.st.tables {
		for j := range ti.Keys() {
			reopened += ti.Pending(j)
		}
	}
	require.Equal(t, pending, reopened, "pending counts read from the lists")
	qs := queries(model, 3, 100, r)
	checkQueries(t, db, model, qs, "version 2")
	insert(40)
	v, c, err := db.store.Get(format.MetaFormat)
	require.NoError(t, err)
	require.Equal(t, format.VersionFor(false), binary.BigEndian.Uint32(v))
	require.NoError(t, c.Close())
	checkQueries(t, db, model, qs, "version 3")
	_, err = db.Check(ctx)
	require.NoError(t, err)
}

// pendingCounts is each block's count of pending fingerprints.
func pendingCounts(ti *table.Index) []uint16 {
	out := make([]uint16, ti.Len())
	for j := range out {
		out[j] = uint16(ti.Pending(j))
	}
	return out
}
