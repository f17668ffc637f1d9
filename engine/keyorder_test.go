package engine

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/stretchr/testify/require"
)

// TestKeyOrderOfStores: a new index uses store.KeyOrder; an index that an
// earlier build made with Pebble's default comparer opens with that one and
// seeks its postings without prefixes. In both, queries match the oracle
// and a flush of fingerprints already stored does not store them again.
func TestKeyOrderOfStores(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		order *pebble.Comparer
	}{{"new", store.KeyOrder}, {"earlier build", pebble.DefaultComparer}} {
		t.Run(tc.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, 4))
			dir := t.TempDir()
			o := testOptions()
			o.knobs.postingsPerSST = 97 // several files, a fingerprint's postings across two
			o.knobs.newStoreOrder = tc.order
			db, err := Open(dir, o)
			require.NoError(t, err)
			defer func() { db.Close() }()
			docs := corpus(3000, 9)
			require.NoError(t, db.Load(ctx, DocsOf(docs)))
			ssts, err := filepath.Glob(filepath.Join(dir, "pebble", "*.sst"))
			require.NoError(t, err)
			require.Greater(t, len(ssts), 3000/97)
			model := oracleOf(docs)
			require.NoError(t, db.Close())

			db = openT(t, dir, testOptions())
			require.Equal(t, tc.order == store.KeyOrder, db.store.PrefixSeek)
			desc, err := pebble.Peek(db.dir+"/pebble", vfs.Default)
			require.NoError(t, err)
			opts, err := os.ReadFile(desc.OptionsFilename)
			require.NoError(t, err)
			require.True(t, strings.Contains(string(opts), "comparer="+tc.order.Name+"\n"), "OPTIONS names %s", tc.order.Name)
			var batch []Doc
			for i := range 400 { // every other one a stored fingerprint
				d := Doc{ID: 1<<40 + uint64(i), Fingerprint: r.Uint64()}
				if i%2 == 0 {
					d.Fingerprint = docs[r.IntN(len(docs))].Fingerprint
				}
				batch = append(batch, d)
				model[d.ID] = d
			}
			require.NoError(t, db.InsertBatch(ctx, batch))
			require.NoError(t, db.Flush(ctx))
			distinct := map[uint64]bool{}
			for _, d := range model {
				distinct[d.Fingerprint] = true
			}
			st, err := db.Stats(ctx)
			require.NoError(t, err)
			require.Equal(t, int64(len(distinct)), st.Fingerprints)
			checkQueries(t, db, model, queries(model, 3, 200, r), tc.name)
			_, err = db.Check(ctx)
			require.NoError(t, err)
		})
	}
}

// TestUnknownKeyOrder: a store whose OPTIONS file names a comparer this
// build does not know is refused with ErrCorrupt naming the file, and
// nothing in it is changed.
func TestUnknownKeyOrder(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := openT(t, dir, testOptions())
	require.NoError(t, db.Insert(ctx, Doc{ID: 1, Fingerprint: 42}))
	require.NoError(t, db.Close())
	opts, err := filepath.Glob(filepath.Join(dir, "pebble", "OPTIONS-*"))
	require.NoError(t, err)
	require.NotEmpty(t, opts)
	file := opts[len(opts)-1]
	text, err := os.ReadFile(file)
	require.NoError(t, err)
	require.Contains(t, string(text), "comparer="+store.KeyOrder.Name)
	odd := strings.ReplaceAll(string(text), "comparer="+store.KeyOrder.Name, "comparer=someone.elses.v9")
	require.NoError(t, os.WriteFile(file, []byte(odd), 0o644))
	_, err = Open(dir, testOptions())
	require.ErrorIs(t, err, ErrNotIndex)
	require.ErrorContains(t, err, filepath.Base(file))
	require.ErrorContains(t, err, "someone.elses.v9")
	require.NoError(t, os.WriteFile(file, text, 0o644))
	db = openT(t, dir, testOptions())
	defer db.Close()
	got, err := db.Get(ctx, 1)
	require.NoError(t, err)
	require.Equal(t, uint64(42), got.Fingerprint)
}
