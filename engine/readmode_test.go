package engine

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/vfs"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseReadMode(t *testing.T) {
	for _, m := range []ReadMode{ReadsAuto, ReadsBuffered, ReadsDirect, ReadsBlocking} {
		got, err := ParseReadMode(m.String())
		require.NoError(t, err)
		assert.Equal(t, m, got)
	}
	_, err := ParseReadMode("fast")
	require.Error(t, err)
	assert.Contains(t, err.Error(), `"fast"`)
	assert.Equal(t, "ReadMode(9)", ReadMode(9).String())
	_, err = Open(t.TempDir(), Options{Reads: 9})
	require.ErrorIs(t, err, ErrOptions)
	assert.Contains(t, err.Error(), "Reads = 9")
}

// TestReadsAuto: the default reads with O_DIRECT an index whose files are
// more than 1.2 times the memory limit, read-only or not, and no other; a
// mode given is kept whatever the sizes.
func TestReadsAuto(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := corpus(2000, 5)
	model := oracleOf(docs)
	qs := queries(model, 3, 100, rand.New(rand.NewPCG(5, 5)))
	db := openT(t, dir, testOptions())
	require.NoError(t, db.Load(ctx, DocsOf(docs)))
	require.NoError(t, db.Close())
	size := store.DirSize(vfs.Default, filepath.Join(dir, store.Dir))
	require.Greater(t, size, int64(3<<10))
	small, large := size/3, int64(1)<<50 // memory limits well either side of the index
	for _, c := range []struct {
		name     string
		reads    ReadMode
		readOnly bool
		limit    int64
		direct   bool
	}{
		{"read-only, three times the memory", ReadsAuto, true, small, true},
		{"read-only, smaller than the memory", ReadsAuto, true, large, false},
		{"read-only, 1.5 times the memory", ReadsAuto, true, size * 2 / 3, true},
		{"read-only, 1.1 times the memory", ReadsAuto, true, size * 10 / 11, false},
		{"writable, three times the memory", ReadsAuto, false, small, true},
		{"writable, 1.1 times the memory", ReadsAuto, false, size * 10 / 11, false},
		{"buffered, read-only, three times the memory", ReadsBuffered, true, small, false},
		{"blocking, read-only, three times the memory", ReadsBlocking, true, small, false},
		{"direct, smaller than the memory", ReadsDirect, false, large, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			o := testOptions()
			o.Reads, o.ReadOnly, o.MemoryLimit = c.reads, c.readOnly, c.limit
			db := openT(t, dir, o)
			defer db.Close()
			if db.ring == nil && c.reads != ReadsBlocking {
				t.Skip("no io_uring here: every mode reads with pread")
			}
			assert.Equal(t, c.direct, db.direct)
			st, err := db.Stats(ctx)
			require.NoError(t, err)
			assert.Equal(t, c.direct, st.ReadDirect)
			checkQueries(t, db, model, qs, c.name)
		})
	}
}

// TestWritableDirect: a writable index the default reads direct takes
// writes: flushes, which read the blocks they rewrite, and Pebble's
// compactions leave it answering as the oracle, after each flush and once
// opened again.
func TestWritableDirect(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	docs := corpus(3000, 21)
	db := openT(t, dir, testOptions())
	require.NoError(t, db.Load(ctx, DocsOf(docs[:1500])))
	require.NoError(t, db.Close())
	o := testOptions()
	o.CacheSize, o.MemoryLimit = 1<<20, 1<<10 // blocks read from the files, direct
	db = openT(t, dir, o)
	if db.ring == nil {
		db.Close()
		t.Skip("no io_uring here: every mode reads with pread")
	}
	assert.True(t, db.direct, "a writable index above the line is read direct")
	model := oracleOf(docs[:1500])
	r := rand.New(rand.NewPCG(21, 21))
	for from := 1500; from < len(docs); from += 500 {
		batch := docs[from:min(from+500, len(docs))]
		require.NoError(t, db.InsertBatch(ctx, batch))
		require.NoError(t, db.Flush(ctx))
		for _, d := range batch {
			model[d.ID] = d
		}
		checkQueries(t, db, model, queries(model, 3, 100, r), fmt.Sprintf("after %d documents", from+len(batch)))
	}
	_, err := db.Check(ctx)
	require.NoError(t, err)
	require.NoError(t, db.Close())
	db = openT(t, dir, o)
	defer db.Close()
	checkQueries(t, db, model, queries(model, 3, 200, r), "opened again")
}

func TestAutoDirect(t *testing.T) {
	for _, c := range []struct {
		size, limit int64
		want        bool
	}{
		{121, 100, true},
		{120, 100, false},
		{100, 100, false},
		{50, 100, false},
		{1 << 40, 0, false}, // no limit known
	} {
		assert.Equal(t, c.want, autoDirect(c.size, c.limit), "an index of %d under %d", c.size, c.limit)
	}
}

// TestDeprecatedReads: the former fields choose the modes they named.
func TestDeprecatedReads(t *testing.T) {
	for _, c := range []struct {
		o    Options
		want ReadMode
	}{
		{Options{BlockingReads: true}, ReadsBlocking},
		{Options{DirectReads: true}, ReadsDirect},
		{Options{DirectReads: true, Reads: ReadsBuffered}, ReadsBuffered},
		{Options{}, ReadsAuto},
	} {
		o, err := c.o.withDefaults()
		require.NoError(t, err)
		assert.Equal(t, c.want, o.Reads)
	}
}
