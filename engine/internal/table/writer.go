package table

import (
	"github.com/simhashdb/simhashdb/codec"
	"github.com/simhashdb/simhashdb/engine/internal/cache"
	"github.com/simhashdb/simhashdb/engine/internal/format"
)

// Setter is where a table's keys go: a flush's Pebble batch (batchSetter)
// or a bulk load's sstable writer. Both copy what they are given.
type Setter interface {
	Set(key, value []byte) error
}

// Writer writes the blocks of one table, each with its block
// directory entry, and builds the table's new in-memory directory: what a
// flush's merge and a bulk load share.
type Writer struct {
	Table  int
	Blocks Setter
	Dir    Setter
	Index  *Index // the new directory, blocks in key order
}

// Block writes block (whose last fingerprint is key) and its directory
// entry, and appends it to the directory with cache slot s.
func (w *Writer) Block(key uint64, block []byte, s *cache.Slot) error {
	k := format.TableKey(format.SpaceTables, w.Table, key)
	if err := w.Blocks.Set(k, block); err != nil {
		return err
	}
	k[0] = format.SpaceBlockDir
	e := format.NewDirEntry(len(block), codec.BlockVersion(block))
	if err := w.Dir.Set(k, format.DirValue(e)); err != nil {
		return err
	}
	w.Index.AppendBlock(key, e, 0, s)
	return nil
}
