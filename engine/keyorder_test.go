package engine

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/cockroachdb/pebble/v2"
	"github.com/cockroachdb/pebble/v2/vfs"
	"github.com/simhashdb/simhashdb/engine/internal/format"
	"github.com/stretchr/testify/require"
)

// orderKeys returns keys of every shape the index stores, bounds it seeks
// to, and the neighbours of the posting split: short and long keys in the
// postings space, fingerprints 0 and all-ones.
func orderKeys(r *rand.Rand) [][]byte {
	keys := [][]byte{{}, {format.SpacePostings}, {format.SpacePostings + 1}, {format.SpacePostings - 1, 0xff}}
	fps := []uint64{0, 1, ^uint64(0), ^uint64(0) - 1, 0x0300000000000003}
	for range 30 {
		fps = append(fps, r.Uint64())
	}
	for _, fp := range fps {
		p := format.PostingPrefix(fp)
		keys = append(keys, p, p[:1+r.IntN(8)], format.PostingKey(fp, 0), format.PostingKey(fp, ^uint64(0)), format.PostingKey(fp, r.Uint64()),
			append(bytes.Clone(p), byte(r.Uint32())), format.PrefixEnd(p), format.DocKey(fp), format.TableKey(format.SpaceTables, 3, fp),
			binary.BigEndian.AppendUint64([]byte{format.SpacePostings}, fp)[:1+r.IntN(9)])
	}
	return keys
}

// TestKeyOrder checks keyOrder against Pebble's rules for a comparer
// (pebble.CheckComparer assumes every suffix fits every prefix, which is
// not so here): it orders as bytes.Compare does; prefixes order keys before
// suffixes; a prefix sorts before its longer keys; ImmediateSuccessor gives
// the next whole-prefix key.
func TestKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := orderKeys(r)
	c := keyOrder
	prefix := func(k []byte) []byte { return k[:c.Split(k)] }
	for _, a := range keys {
		n := c.Split(a)
		require.True(t, n >= 0 && n <= len(a), "Split(%x) = %d", a, n)
		if n < len(a) {
			require.Negative(t, c.Compare(prefix(a), a), "prefix of %x sorts first", a)
			require.Equal(t, format.PostingPrefixLen, n, "only posting keys have a suffix: %x", a)
		}
		for _, b := range keys {
			cmp := c.Compare(a, b)
			require.Equal(t, bytes.Compare(a, b), cmp, "Compare(%x, %x)", a, b)
			require.Equal(t, cmp == 0, c.Equal(a, b))
			pc := bytes.Compare(prefix(a), prefix(b))
			if cmp <= 0 {
				require.LessOrEqual(t, pc, 0, "prefixes of %x <= %x", a, b)
			}
			if pc < 0 {
				require.Negative(t, cmp, "%x < %x by prefix", a, b)
			}
			if pc == 0 {
				require.Equal(t, cmp, c.ComparePointSuffixes(a[c.Split(a):], b[c.Split(b):]), "suffixes of %x, %x", a, b)
			}
		}
		if n == len(a) && len(a) > 0 {
			s := c.ImmediateSuccessor(nil, a)
			require.Equal(t, len(s), c.Split(s), "successor %x of %x is a whole prefix", s, a)
			require.Negative(t, c.Compare(a, s), "successor %x of %x", s, a)
			for _, b := range keys {
				if c.Split(b) == len(b) && c.Compare(a, b) < 0 {
					require.LessOrEqual(t, c.Compare(s, b), 0, "%x lies between %x and its successor %x", b, a, s)
				}
			}
		}
	}
}

// TestKeyOrderOfStores: a new index uses keyOrder; an index that an
// earlier build made with Pebble's default comparer opens with that one and
// seeks its postings without prefixes. In both, queries match the oracle
// and a flush of fingerprints already stored does not store them again.
func TestKeyOrderOfStores(t *testing.T) {
	for _, tc := range []struct {
		name  string
		order *pebble.Comparer
	}{{"new", keyOrder}, {"earlier build", pebble.DefaultComparer}} {
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
			require.NoError(t, db.Load(ctx, docs))
			ssts, err := filepath.Glob(filepath.Join(dir, "pebble", "*.sst"))
			require.NoError(t, err)
			require.Greater(t, len(ssts), 3000/97)
			model := oracleOf(docs)
			require.NoError(t, db.Close())

			db = openT(t, dir, testOptions())
			require.Equal(t, tc.order == keyOrder, db.prefixSeek)
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
	require.Contains(t, string(text), "comparer="+keyOrder.Name)
	odd := strings.ReplaceAll(string(text), "comparer="+keyOrder.Name, "comparer=someone.elses.v9")
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
