package engine

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/simhashdb/simhashdb/engine/internal/store"
	"github.com/simhashdb/simhashdb/internal/fingerprints"
	"github.com/stretchr/testify/require"
)

// TestFlushBatchInOrder checks that a flush's batches hold their keys in
// Pebble's order: commit writes them into an sstable as they are, and
// would have to sort them otherwise. The flushes add, replace and delete
// documents, fill pending lists, split blocks, and replace the last
// fingerprint of a table with a larger one, so that its block is rewritten
// under a larger key.
// orderCheck counts the keys written to it and those out of order.
type orderCheck struct {
	t              *testing.T
	flush          int
	prev           []byte
	keys, disorder int
}

func (c *orderCheck) key(k []byte) error {
	c.keys++
	if c.prev != nil && store.KeyOrder.Compare(c.prev, k) >= 0 {
		c.disorder++
		c.t.Logf("flush %d: %x before %x", c.flush, c.prev, k)
	}
	c.prev = append(c.prev[:0], k...)
	return nil
}

func (c *orderCheck) Set(k, _ []byte) error   { return c.key(k) }
func (c *orderCheck) Delete(k []byte) error   { return c.key(k) }
func (c *orderCheck) Merge(k, _ []byte) error { return c.key(k) }

func TestFlushBatchInOrder(t *testing.T) {
	t.Parallel()
	var batches, keys, disorder int
	o := testOptions()
	o.knobs.flushWrites = func(parts []store.Writes, raw []*store.Batch) {
		batches++
		w := &orderCheck{t: t, flush: batches}
		for _, p := range parts {
			require.NoError(t, p.Each(w))
		}
		keys += w.keys
		disorder += w.disorder
		// The batches themselves, as they are: one out of order would be
		// sorted in memory before it is written.
		for _, b := range raw {
			w := &orderCheck{t: t, flush: batches}
			require.NoError(t, b.EachKey(w.key))
			disorder += w.disorder
		}
	}
	r := rand.New(rand.NewPCG(7, 7))
	o.BlockSize = 256 // many blocks and splits
	db := openT(t, t.TempDir(), o)
	defer db.Close()
	docs := corpus(3000, 7)
	require.NoError(t, db.Load(ctx, DocsOf(docs)))
	model := oracleOf(docs)
	for round := range 30 {
		var batch []Doc
		for range 200 {
			d := Doc{ID: r.Uint64N(6000), Fingerprint: r.Uint64(), Name: fmt.Sprint("n", r.IntN(9))}
			switch r.IntN(4) {
			case 0: // the same fingerprint again, a new name
				if old, ok := model[d.ID]; ok {
					d.Fingerprint = old.Fingerprint
				}
			case 1:
				d.Fingerprint = fingerprints.Planted(1, 3, 0, uint64(round))[0] ^ 1<<r.IntN(64)
			}
			batch = append(batch, d)
			model[d.ID] = d
		}
		require.NoError(t, db.InsertBatch(ctx, batch))
		if round%5 == 4 {
			// Table 0's last fingerprint leaves and one above it comes:
			// the last block is rewritten under a larger key.
			tb := &db.design.Tables[0]
			var last uint64
			for _, d := range model {
				last = max(last, tb.Permute(d.Fingerprint))
			}
			for id, d := range model {
				if tb.Permute(d.Fingerprint) == last {
					require.NoError(t, db.Delete(ctx, id))
					delete(model, id)
				}
			}
			top := Doc{ID: 10000 + uint64(round), Fingerprint: tb.Unpermute(last + ^last/2 + 1)}
			require.NoError(t, db.Insert(ctx, top))
			model[top.ID] = top
		}
		for range 20 {
			id := r.Uint64N(6000)
			require.NoError(t, db.Delete(ctx, id))
			delete(model, id)
		}
		require.NoError(t, db.Flush(ctx))
	}
	require.Equal(t, 30, batches)
	require.Zero(t, disorder, "keys out of order in %d flush batches of %d keys", batches, keys)
	checkQueries(t, db, model, queries(model, 3, 100, r), "after the flushes")
	_, err := db.Check(ctx)
	require.NoError(t, err)
}
