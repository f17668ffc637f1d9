package store

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"

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

// TestKeyOrder checks KeyOrder against Pebble's rules for a comparer
// (pebble.CheckComparer assumes every suffix fits every prefix, which is
// not so here): it orders as bytes.Compare does; prefixes order keys before
// suffixes; a prefix sorts before its longer keys; ImmediateSuccessor gives
// the next whole-prefix key.
func TestKeyOrder(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	keys := orderKeys(r)
	c := KeyOrder
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
