package engine

import (
	"github.com/cockroachdb/pebble/v2"
	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
)

// setter is where a table's keys go: a flush's Pebble batch (batchSetter)
// or a bulk load's sstable writer. Both copy what they are given.
type setter interface {
	Set(key, value []byte) error
}

// batchSetter sets keys in a Pebble batch.
type batchSetter struct{ b *pebble.Batch }

func (s batchSetter) Set(key, value []byte) error { return s.b.Set(key, value, nil) }

// tableWriter writes the blocks of one table, each with its block
// directory entry, and builds the table's new in-memory directory: what a
// flush's merge and a bulk load share.
type tableWriter struct {
	t      int
	blocks setter
	dir    setter
	ti     *tableIndex // the new directory, blocks in key order
}

// block writes block (whose last fingerprint is key) and its directory
// entry, and appends it to the directory with cache slot s.
func (w *tableWriter) block(key uint64, block []byte, s *cache.Slot) error {
	k := format.TableKey(format.SpaceTables, w.t, key)
	if err := w.blocks.Set(k, block); err != nil {
		return err
	}
	k[0] = format.SpaceBlockDir
	if err := w.dir.Set(k, format.DirValue(len(block))); err != nil {
		return err
	}
	w.ti.appendBlock(key, uint32(len(block)), 0, s)
	return nil
}
